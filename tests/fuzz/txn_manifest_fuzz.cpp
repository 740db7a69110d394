// libFuzzer target: parse_manifest over arbitrary bytes. A snapshot manifest is venvfix's own
// file, but one torn by a crash or edited by hand must be refused, never followed out of the
// venv. For what parses: every entry's path stays inside the venv and outside .venvfix; written
// back (manifest_text) it reads as the same header and entries, and that text is a fixed point;
// each entry line read alone (parse_entry) and its shape (shape_of_entry_line) agree with the
// whole read; a version 2+ tree manifest's stored identities (visit_stored_identities) are those
// of its F entries.
//
// The first byte picks a header put in front of the rest (a tree manifest of version 3, 2 or 1,
// or a transaction's), so that most inputs reach the entry lines; from 4 on, the input is the
// whole text.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_check.hpp"
#include "txn/manifest.hpp"
#include "txn/paths.hpp"

namespace {

using venvfix::txn::Manifest;
using venvfix::txn::ManifestEntry;
using venvfix::txn::SnapshotKind;

constexpr std::string_view k_headers[] = {
    "venvfix-snapshot 3\nid a\nkind tree\ncreated c\nmethod hardlink\nwalked 9\nentries\n",
    "venvfix-snapshot 2\nid a\nkind tree\ncreated c\nmethod hardlink\nentries\n",
    "venvfix-snapshot 1\nid a\nkind tree\ncreated c\nmethod rename\nentries\n",
    "venvfix-snapshot 3\nid a\nkind transaction\ncreated c\nmethod rename\nentries\n",
};

bool same_entry(const ManifestEntry& a, const ManifestEntry& b) {
  return a.type == b.type && a.mode == b.mode && a.size == b.size && a.dev == b.dev &&
         a.ino == b.ino && a.nlink == b.nlink && a.mtime_ns == b.mtime_ns &&
         a.ctime_ns == b.ctime_ns && a.path == b.path && a.target == b.target &&
         a.carried == b.carried;
}

bool same_header(const Manifest& a, const Manifest& b) {
  // The walk time is written only where it means something (a version 3 tree snapshot).
  const bool walked = a.kind == SnapshotKind::tree && a.format >= 3;
  return a.format == b.format && a.id == b.id && a.kind == b.kind && a.created == b.created &&
         a.method == b.method && a.reason == b.reason && (!walked || a.walked_ns == b.walked_ns);
}

// The entry lines of `text`, non-empty ones only, in order.
std::vector<std::string_view> entry_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t at = text.find("\nentries\n");
  if (at == std::string_view::npos) return lines;
  for (at += 9; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    if (end > at) lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

// Each line alone and its shape against the whole read.
void check_lines(const Manifest& manifest, std::string_view text) {
  const std::vector<std::string_view> lines = entry_lines(text);
  VENVFIX_FUZZ_CHECK(lines.size() == manifest.entries.size());
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const ManifestEntry& whole = manifest.entries[i];
    auto alone = venvfix::txn::parse_entry(lines[i], manifest);
    VENVFIX_FUZZ_CHECK(alone);
    ManifestEntry expected = whole;
    if (expected.type != 'D') expected.carried = false;  // set from its directory's line
    VENVFIX_FUZZ_CHECK(same_entry(*alone, expected));
    venvfix::txn::EntryLineShape shape;
    VENVFIX_FUZZ_CHECK(venvfix::txn::shape_of_entry_line(lines[i], shape));
    VENVFIX_FUZZ_CHECK(shape.size == whole.size);
    VENVFIX_FUZZ_CHECK(shape.type == (whole.type == 'D' && whole.carried ? 'd' : whole.type));
  }
}

void check_stored_identities(const Manifest& manifest, std::string_view text) {
  std::vector<const ManifestEntry*> files;
  if (manifest.kind == SnapshotKind::tree && manifest.format >= 2) {
    for (const ManifestEntry& e : manifest.entries) {
      if (e.type == 'F') files.push_back(&e);
    }
  }
  std::size_t visited = 0;
  auto status =
      venvfix::txn::visit_stored_identities(text, "fuzz", [&](const venvfix::FileIdentity& id) {
        VENVFIX_FUZZ_CHECK(visited < files.size());
        const ManifestEntry& e = *files[visited++];
        VENVFIX_FUZZ_CHECK(id.device == e.dev && id.inode == e.ino && id.size == e.size &&
                           id.mtime_ns == e.mtime_ns && id.mode == e.mode);
      });
  VENVFIX_FUZZ_CHECK(status);
  VENVFIX_FUZZ_CHECK(visited == files.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::string text;
  const std::string_view rest = venvfix::fuzz::as_text(data + 1, size - 1);
  if (data[0] < std::size(k_headers)) {
    text = k_headers[data[0]];
    text += rest;
  } else {
    text = venvfix::fuzz::as_text(data, size);
  }
  auto parsed = venvfix::txn::parse_manifest(text, "fuzz");
  if (!parsed) {
    VENVFIX_FUZZ_CHECK(parsed.error().message.starts_with("fuzz, line "));
    return 0;
  }
  for (const ManifestEntry& e : parsed->entries) {
    VENVFIX_FUZZ_CHECK(venvfix::txn::is_safe_relative(e.path));
    VENVFIX_FUZZ_CHECK(!venvfix::txn::is_state_path(e.path));
  }
  const std::string written = venvfix::txn::manifest_text(*parsed);
  auto again = venvfix::txn::parse_manifest(written, "written");
  if (!again) std::fprintf(stderr, "%s\n", again.error().message.c_str());
  VENVFIX_FUZZ_CHECK(again);
  VENVFIX_FUZZ_CHECK(same_header(*parsed, *again));
  VENVFIX_FUZZ_CHECK(again->entries.size() == parsed->entries.size());
  for (std::size_t i = 0; i < parsed->entries.size(); ++i) {
    VENVFIX_FUZZ_CHECK(same_entry(parsed->entries[i], again->entries[i]));
  }
  VENVFIX_FUZZ_CHECK(venvfix::txn::manifest_text(*again) == written);
  check_lines(*again, written);
  check_stored_identities(*again, written);
  return 0;
}
