// flock(2) on an open file: how venvfix's locks (the venv's, the cache's) are taken. A try first,
// so that the caller can refuse (exit 6) or say who holds it before it waits, then a wait that a
// signal's EINTR does not end.
#pragma once

#include "venvfix/base/fs.hpp"
#include "venvfix/base/result.hpp"

namespace venvfix {

enum class FlockMode { shared, exclusive };

// Whether the lock was taken at once; false when another open file description holds it in a
// conflicting mode. Errors (a filesystem without flock) name `path`, the file `fd` opened.
Result<bool> try_flock(const Fd& fd, FlockMode mode, const fs::path& path);
// Blocks until the lock is taken.
Status wait_flock(const Fd& fd, FlockMode mode, const fs::path& path);

}  // namespace venvfix
