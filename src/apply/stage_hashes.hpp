// Hash each byte once: the sha256 of every file staging wrote (checked against RECORD as it was
// inflated) goes into the venv's hash cache under the identity the file has after the moves,
// so the verification analysis that follows reads no library bytes.
#pragma once

#include <cstddef>
#include <span>

#include "venvfix/apply/stage.hpp"
#include "venvfix/env/venv.hpp"

namespace venvfix::apply {

// Seeds <venv>/.venvfix/hash-cache-v1 with the staged files, now at their places in the venv
// (one lstat each; a file whose size is not the staged one is skipped). Returns how many were
// seeded. Never fails: a cache that cannot be saved only costs the verification a read.
std::size_t seed_hash_cache(const env::Venv& venv, std::span<const StagedWheel> staged);

}  // namespace venvfix::apply
