// What /proc/locks says about flock(2) waiters: a test sees that a process or thread really
// blocks on a lock instead of guessing it from a sleep.
#pragma once

#include <chrono>
#include <filesystem>

namespace venvfix::testing {

// Whether, within `limit`, someone blocks in flock(2) on `file`: /proc/locks lists such a waiter
// as "N: -> FLOCK ADVISORY READ|WRITE <pid> <major>:<minor>:<inode> …".
bool someone_waits_in_flock(const std::filesystem::path& file, std::chrono::seconds limit);

}  // namespace venvfix::testing
