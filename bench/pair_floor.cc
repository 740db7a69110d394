// pair_floor: the system calls that any later snapshot + rollback of one changed distribution
// has to make, and nothing else, so that bench/snapshot_bench.sh can show how far venvfix's
// later pair is from what the filesystem allows (the floor under issue 13's "2 % of cp -a").
//
//   g++ -O2 -std=c++20 -pthread -o pair_floor bench/pair_floor.cc
//   pair_floor setup VENV STATE      untimed: every file of VENV linked into STATE/store, its
//                                    inode and path listed in STATE/list
//   pair_floor create VENV STATE     a later snapshot: each directory opened and fstat'ed (an
//                                    unchanged one need not be read), the list written again and
//                                    fsync'ed (the snapshot's record, durable)
//   pair_floor rollback VENV STATE   the list read, every file fstatat'ed by name in its
//                                    directory on two threads (a file written in place changes
//                                    the file, not its directory), and each whose inode is not
//                                    the listed one put back: linked from the store into staging,
//                                    the venv's file renamed away (kept: the rollback can be
//                                    undone), the staged link renamed into place; a journal
//                                    written and fsync'ed before the renames, each touched
//                                    directory fsync'ed after
//
// What it leaves out, and venvfix does not: a manifest with modes, sizes and times (the floor
// compares inodes only), escaping, a lock, the store's own check of each file to put back, a
// staging tree mirroring the venv's (flat here), directories that appeared or went, symlinks.
// STATE must be on VENV's filesystem.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

// Milliseconds since the last call (the first: since the process's first call).
double lap() {
  static auto last = std::chrono::steady_clock::now();
  const auto now = std::chrono::steady_clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - last).count();
  last = now;
  return ms;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "pair_floor: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

struct Dir {
  std::string rel;                 // relative to the venv, "" for its root
  std::vector<std::size_t> files;  // indexes into the file list
};

struct File {
  std::string_view name;  // the last component, in the list's text
  std::size_t dir = 0;
  ino_t ino = 0;
};

struct Tree {
  std::vector<Dir> dirs;
  std::vector<File> files;
  std::deque<std::string> names;  // what `name` views when the tree was walked, not read
};

std::string rel_of(const Tree& tree, const File& file) {
  const std::string& parent = tree.dirs[file.dir].rel;
  return parent.empty() ? std::string(file.name) : parent + "/" + std::string(file.name);
}

void walk(int parent, const std::string& rel, Tree& tree) {
  const int fd = rel.empty() ? ::dup(parent)
                             : ::openat(parent, rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) die("open " + rel);
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) die("fdopendir " + rel);
  tree.dirs.push_back({rel, {}});
  const std::size_t me = tree.dirs.size() - 1;
  std::vector<std::string> subdirs;
  while (dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name == "." || name == ".." || (rel.empty() && name == ".venvfix")) continue;
    std::string path = rel;
    if (!path.empty()) path += '/';
    path += name;
    struct stat st {};
    if (::fstatat(parent, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) die("stat " + path);
    if (S_ISDIR(st.st_mode)) {
      subdirs.push_back(path);
    } else if (S_ISREG(st.st_mode)) {
      tree.dirs[me].files.push_back(tree.files.size());
      tree.files.push_back({tree.names.emplace_back(name), me, st.st_ino});
    }
  }
  ::closedir(dir);
  for (const std::string& sub : subdirs) walk(parent, sub, tree);
}

// The list: "D rel" starts a directory, "F ino name" is a file in it.
std::string list_text(const Tree& tree) {
  std::string out;
  for (const Dir& dir : tree.dirs) {
    out += "D " + dir.rel + "\n";
    for (std::size_t i : dir.files) {
      out += "F " + std::to_string(tree.files[i].ino) + " ";
      out += tree.files[i].name;
      out += "\n";
    }
  }
  return out;
}

// The tree's file names view `text`, which must outlive it: each line's newline becomes the
// NUL that ends its name for fstatat.
Tree parse_list(std::string& text) {
  Tree tree;
  tree.files.reserve(text.size() / 24);
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    const std::string_view line(text.data() + at, end - at);
    text[end] = '\0';
    at = end + 1;
    if (line[0] == 'D') {
      tree.dirs.push_back({std::string(line.substr(2)), {}});
      continue;
    }
    File file;
    const char* space = std::from_chars(line.data() + 2, line.data() + line.size(), file.ino).ptr;
    file.name = line.substr(static_cast<std::size_t>(space + 1 - line.data()));
    file.dir = tree.dirs.size() - 1;
    tree.dirs.back().files.push_back(tree.files.size());
    tree.files.push_back(file);
  }
  return tree;
}

std::string read_all(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) die("open " + path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) die("stat " + path);
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  if (::read(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) die("read");
  ::close(fd);
  return text;
}

void write_durably(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) die("create " + tmp);
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size())) die("write");
  if (::fsync(fd) != 0) die("fsync " + tmp);
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) die("rename " + tmp);
}

int open_dir(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) die("open " + path);
  return fd;
}

void fsync_dir(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) die("fsync " + path);
  ::close(fd);
}

void setup(const std::string& venv, const std::string& state) {
  const int root = ::open(venv.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) die("open " + venv);
  Tree tree;
  walk(root, "", tree);
  for (const std::string& dir : {state, state + "/store", state + "/staging"}) {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) die("mkdir " + dir);
  }
  for (const File& file : tree.files) {
    const std::string key = state + "/store/" + std::to_string(file.ino);
    const std::string rel = rel_of(tree, file);
    if (::linkat(root, rel.c_str(), AT_FDCWD, key.c_str(), 0) != 0 && errno != EEXIST) {
      die("link " + rel);
    }
  }
  write_durably(state + "/list", list_text(tree));
  ::sync();
}

void create(const std::string& venv, const std::string& state) {
  const int root = ::open(venv.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) die("open " + venv);
  lap();
  const std::string text = read_all(state + "/list");
  std::string parsed = text;
  const Tree tree = parse_list(parsed);
  const double read_ms = lap();
  for (const Dir& dir : tree.dirs) {
    const int fd = dir.rel.empty() ? ::dup(root)
                                   : ::openat(root, dir.rel.c_str(),
                                              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) die("open " + dir.rel);
    ::close(fd);
  }
  const double dirs_ms = lap();
  write_durably(state + "/list", text);
  std::fprintf(stderr,
               "create: list read %.1f ms, %zu directories fstat'ed %.1f ms, written %.1f ms\n",
               read_ms, tree.dirs.size(), dirs_ms, lap());
}

// The files of directories [begin, end) whose inode is not the listed one.
std::vector<std::size_t> changed_in(const Tree& tree, int root, std::size_t begin,
                                    std::size_t end) {
  std::vector<std::size_t> changed;
  for (std::size_t d = begin; d < end; ++d) {
    const Dir& dir = tree.dirs[d];
    const int fd = dir.rel.empty() ? ::dup(root)
                                   : ::openat(root, dir.rel.c_str(),
                                              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) die("open " + dir.rel);
    for (std::size_t i : dir.files) {
      struct stat st {};
      const File& file = tree.files[i];
      if (::fstatat(fd, file.name.data(), &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_ino != file.ino) {
        changed.push_back(i);
      }
    }
    ::close(fd);
  }
  return changed;
}

void rollback(const std::string& venv, const std::string& state) {
  const int root = ::open(venv.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) die("open " + venv);
  lap();
  std::string text = read_all(state + "/list");
  const Tree tree = parse_list(text);
  const double read_ms = lap();
  const std::size_t half = tree.dirs.size() / 2;
  std::vector<std::size_t> other;
  std::thread helper([&] { other = changed_in(tree, root, half, tree.dirs.size()); });
  std::vector<std::size_t> changed = changed_in(tree, root, 0, half);
  helper.join();
  changed.insert(changed.end(), other.begin(), other.end());
  const double compare_ms = lap();
  // The files moved away are kept in a directory of this rollback's own (as venvfix keeps them
  // in its transaction's snapshot): renaming onto a kept file of an earlier round would free
  // that file's blocks inside the rename.
  const std::string kept =
      state + "/kept." +
      std::to_string(std::chrono::system_clock::now().time_since_epoch().count());
  if (::mkdir(kept.c_str(), 0755) != 0) die("mkdir " + kept);
  // The store, staging and kept directories opened once: their names are bare names below.
  const int store_fd = open_dir(state + "/store");
  const int staging_fd = open_dir(state + "/staging");
  const int kept_fd = open_dir(kept);
  std::string journal;
  std::vector<std::string> rels;
  std::set<std::string> touched = {state + "/staging", kept, state};
  for (std::size_t i : changed) {
    const File& file = tree.files[i];
    const std::string& rel = rels.emplace_back(rel_of(tree, file));
    journal += rel;
    journal += '\n';
    if (::linkat(store_fd, std::to_string(file.ino).c_str(), staging_fd, std::to_string(i).c_str(),
                 0) != 0) {
      die("link " + rel);
    }
    std::string dir = venv;
    dir += '/';
    dir += tree.dirs[file.dir].rel;
    touched.insert(std::move(dir));
  }
  const double stage_ms = lap();
  fsync_dir(state + "/staging");  // the staged names durable before the journal names them
  write_durably(state + "/journal", journal);
  const double journal_ms = lap();
  for (std::size_t n = 0; n < changed.size(); ++n) {
    const std::string id = std::to_string(changed[n]);
    const std::string& rel = rels[n];
    if (::renameat(root, rel.c_str(), kept_fd, id.c_str()) != 0 && errno != ENOENT) {
      die("rename " + rel);
    }
    if (::renameat(staging_fd, id.c_str(), root, rel.c_str()) != 0) die("rename into " + rel);
  }
  const double rename_ms = lap();
  const std::vector<std::string> dirs(touched.begin(), touched.end());
  std::vector<std::thread> syncers;
  for (std::size_t t = 0; t < 8; ++t) {
    syncers.emplace_back([&, t] {
      for (std::size_t i = t; i < dirs.size(); i += 8) fsync_dir(dirs[i]);
    });
  }
  for (std::thread& syncer : syncers) syncer.join();
  ::unlink((state + "/journal").c_str());
  std::fprintf(stderr,
               "rollback: list read %.1f ms, %zu files fstatat'ed %.1f ms, %zu staged %.1f ms, "
               "journal %.1f ms, renames %.1f ms, %zu directories fsync'ed %.1f ms\n",
               read_ms, tree.files.size(), compare_ms, changed.size(), stage_ms, journal_ms,
               rename_ms, dirs.size(), lap());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: pair_floor setup|create|rollback VENV STATE\n");
    return 2;
  }
  const std::string mode = argv[1];
  if (mode == "setup") setup(argv[2], argv[3]);
  if (mode == "create") create(argv[2], argv[3]);
  if (mode == "rollback") rollback(argv[2], argv[3]);
  return 0;
}
