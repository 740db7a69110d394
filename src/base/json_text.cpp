#include "venvfix/base/json_text.hpp"

namespace venvfix {

std::string json_text(const nlohmann::json& document, int indent) {
  return document.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_text(const nlohmann::ordered_json& document, int indent) {
  return document.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

namespace {

// How many continuation bytes follow a lead byte, and the range the second byte must fall in
// (which rules out overlong forms, surrogates and code points above U+10FFFF); -1 continuations
// for a byte that cannot start a sequence.
struct Lead {
  int continuations = 0;
  unsigned char second_low = 0x80;
  unsigned char second_high = 0xBF;
};

Lead lead_of(unsigned char byte) {
  if (byte >= 0xC2 && byte <= 0xDF) return {1, 0x80, 0xBF};
  if (byte == 0xE0) return {2, 0xA0, 0xBF};
  if (byte == 0xED) return {2, 0x80, 0x9F};
  if (byte >= 0xE1 && byte <= 0xEF) return {2, 0x80, 0xBF};
  if (byte == 0xF0) return {3, 0x90, 0xBF};
  if (byte >= 0xF1 && byte <= 0xF3) return {3, 0x80, 0xBF};
  if (byte == 0xF4) return {3, 0x80, 0x8F};
  return {-1, 0, 0};
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      ++i;
      continue;
    }
    const Lead lead = lead_of(byte);
    if (lead.continuations < 0 || text.size() - i <= static_cast<std::size_t>(lead.continuations)) {
      return false;
    }
    const auto second = static_cast<unsigned char>(text[i + 1]);
    if (second < lead.second_low || second > lead.second_high) return false;
    for (int k = 2; k <= lead.continuations; ++k) {
      const auto next = static_cast<unsigned char>(text[i + static_cast<std::size_t>(k)]);
      if (next < 0x80 || next > 0xBF) return false;
    }
    i += static_cast<std::size_t>(lead.continuations) + 1;
  }
  return true;
}

}  // namespace venvfix
