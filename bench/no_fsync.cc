// An LD_PRELOAD shim for bench/apply_bench.sh --durability-row: fsync, fdatasync and syncfs
// return at once, without asking the disk for anything. The row it runs is the same cold apply
// with nothing made durable, so that the difference to the real row is what durability costs
// on the disk at hand. Never a mode of venvfix: an apply run this way survives no power cut.
//
//   g++ -O2 -shared -fPIC -o no_fsync.so bench/no_fsync.cc
//   LD_PRELOAD=$PWD/no_fsync.so venvfix ... apply ...
//
// sync_file_range (the writeback venvfix starts while it unpacks) is left alone: the shim
// removes the waits, not the writes.

extern "C" {

int fsync(int /*fd*/) {
  return 0;
}
int fdatasync(int /*fd*/) {
  return 0;
}
int syncfs(int /*fd*/) {
  return 0;
}

}  // extern "C"
