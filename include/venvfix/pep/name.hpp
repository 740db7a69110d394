// Project names, normalised as PEP 503 says: lowercase, runs of "-", "_" and "." become "-".
// `Nvidia_CUDNN.cu12` and `nvidia-cudnn-cu12` name the same distribution.
#pragma once

#include <string>
#include <string_view>

namespace venvfix::pep {

std::string normalize_name(std::string_view name);

// True when `name` is a valid project name (PEP 508: ASCII letters and digits at both ends,
// with ".", "-" and "_" allowed inside).
bool is_valid_name(std::string_view name);

}  // namespace venvfix::pep
