// The journal document: what venvfix writes it reads back the same, and a journal that is damaged
// or edited is refused with a sentence naming the file and what is wrong (recover then stops
// instead of replaying steps it cannot trust).
#include "venvfix/txn/journal.hpp"

#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace venvfix::txn {
namespace {

using ::testing::HasSubstr;

Journal sample() {
  Journal journal;
  journal.id = "20261202T010000123Z-1a2b";
  journal.reason = "apply plan.json";
  journal.created = "2026-12-02T01:00:00Z";
  journal.pid = 4242;
  journal.staging = ".venvfix/staging/20261202T010000123Z-1a2b";
  journal.steps = {{StepOp::make_dir, "lib/python3.12/site-packages/nvidia/cudnn", 0755},
                   {StepOp::move_out, "lib/python3.12/site-packages/nvidia/cudnn/lib/a.so", 0},
                   {StepOp::move_in, "lib/python3.12/site-packages/nvidia/cudnn/lib/a.so", 0},
                   {StepOp::prune_dir, "lib/python3.12/site-packages/old", 0700}};
  return journal;
}

// The sample's text with `edit` applied to its JSON.
std::string edited(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json document = nlohmann::json::parse(to_json_text(sample()));
  edit(document);
  return document.dump();
}

std::string refusal(const std::string& text) {
  auto parsed = parse_journal(text, "/v/.venvfix/journal.json");
  EXPECT_FALSE(parsed);
  if (parsed) return "";
  EXPECT_EQ(parsed.error().code, ExitCode::error);
  EXPECT_THAT(parsed.error().message,
              HasSubstr("/v/.venvfix/journal.json is not a valid venvfix journal"));
  return parsed.error().message;
}

TEST(TxnJournal, WhatIsWrittenReadsBackTheSame) {
  const std::string text = to_json_text(sample());
  auto parsed = parse_journal(text, "journal.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(to_json_text(*parsed), text);
  ASSERT_EQ(parsed->steps.size(), 4U);
  EXPECT_EQ(parsed->steps[0].mode, 0755U);
  EXPECT_EQ(parsed->steps[3].op, StepOp::prune_dir);
}

// A Linux file name is bytes, a JSON string UTF-8: a path that is not UTF-8 is written as its
// bytes in hex and read back exactly; every other path stays a plain "path" (what earlier
// versions wrote and read).
TEST(TxnJournal, APathThatIsNotUtf8ReadsBackByteForByte) {
  Journal journal = sample();
  const std::string latin1 = "lib/python3.12/site-packages/pkg/caf\xe9.py";
  const std::string utf8 = "lib/python3.12/site-packages/pkg/caf\xc3\xa9.py";
  journal.steps.push_back({StepOp::move_out, latin1, 0});
  journal.steps.push_back({StepOp::move_in, utf8, 0});
  const std::string text = to_json_text(journal);
  const nlohmann::json document = nlohmann::json::parse(text);
  EXPECT_EQ(document["steps"][4]["path_hex"],
            "6c69622f707974686f6e332e31322f736974652d7061636b616765732f706b672f636166e92e7079");
  EXPECT_FALSE(document["steps"][4].contains("path"));
  EXPECT_EQ(document["steps"][5]["path"], utf8);
  auto parsed = parse_journal(text, "journal.json");
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(parsed->steps.at(4).path, latin1);
  EXPECT_EQ(parsed->steps.at(5).path, utf8);
  EXPECT_EQ(to_json_text(*parsed), text);
  EXPECT_THAT(refusal(edited([](auto& d) { d["steps"][1]["path_hex"] = "6c6"; })),
              HasSubstr("step 2: bad path_hex 6c6"));
  EXPECT_THAT(refusal(edited([](auto& d) { d["steps"][1]["path_hex"] = "zz"; })),
              HasSubstr("bad path_hex zz"));
  EXPECT_THAT(refusal(edited([](auto& d) { d["steps"][1]["path_hex"] = "2e2e2f78"; })),
              HasSubstr("step path ../x leaves the venv"));
}

TEST(TxnJournal, DamagedOrEditedJournalsAreRefusedNamingWhatIsWrong) {
  EXPECT_THAT(refusal("{\"schema\": \"venvfix-journal/1\", \"id\""),
              HasSubstr("not a JSON object"));
  EXPECT_THAT(refusal(edited([](auto& d) { d["schema"] = "venvfix-journal/9"; })),
              HasSubstr("unknown schema"));
  EXPECT_THAT(refusal(edited([](auto& d) { d.erase("pid"); })), HasSubstr("\"pid\" is missing"));
  EXPECT_THAT(refusal(edited([](auto& d) { d["staging_owned"] = "yes"; })),
              HasSubstr("\"staging_owned\""));
  EXPECT_THAT(refusal(edited([](auto& d) { d["id"] = "../x"; })), HasSubstr("bad id"));
  EXPECT_THAT(refusal(edited([](auto& d) { d["staging"] = "/tmp/staging"; })),
              HasSubstr("bad staging directory"));
  EXPECT_THAT(refusal(edited([](auto& d) { d["steps"][1]["op"] = "unlink"; })),
              HasSubstr("step 2: unknown step unlink"));
  EXPECT_THAT(refusal(edited([](auto& d) { d["steps"][2]["path"] = "../../etc/passwd"; })),
              HasSubstr("step 3: step path ../../etc/passwd leaves the venv"));
  EXPECT_THAT(refusal(edited([](auto& d) { d["steps"][2]["path"] = ".venvfix/lock"; })),
              HasSubstr("leaves the venv"));
  EXPECT_THAT(refusal(edited([](auto& d) { d["steps"][0].erase("mode"); })),
              HasSubstr("step 1: \"mode\" is missing"));
  EXPECT_THAT(refusal(edited([](auto& d) { d["steps"][3] = 7; })),
              HasSubstr("step 4: not an object"));
  EXPECT_THAT(refusal(edited([](auto& d) { d["steps"] = "none"; })), HasSubstr("\"steps\""));
}

}  // namespace
}  // namespace venvfix::txn
