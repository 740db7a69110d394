#include "venvfix/base/json_fields.hpp"

#include <gtest/gtest.h>

namespace venvfix {
namespace {

const nlohmann::json k_object = nlohmann::json::parse(R"({
  "name": "torch", "list": ["a", "b"], "mixed": ["a", 1], "size": 42, "minus": -1,
  "flag": true, "child": {"x": 1}, "nothing": null
})");

JsonFields reader() {
  return JsonFields(k_object, "plan.json: action 1", ExitCode::usage);
}

TEST(JsonFields, ReadsEachTypeAndNamesTheKeyOnAMismatch) {
  const JsonFields r = reader();
  EXPECT_EQ(*r.string("name"), "torch");
  EXPECT_EQ(*r.strings("list"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(**r.count("size"), 42u);
  EXPECT_EQ(**r.integer("minus"), -1);
  EXPECT_TRUE(*r.boolean("flag"));
  EXPECT_EQ((*r.object("child"))->at("x"), 1);
  EXPECT_EQ((*r.array("list"))->size(), 2u);

  auto wrong = r.string("size");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().code, ExitCode::usage);
  EXPECT_EQ(wrong.error().message, "plan.json: action 1: \"size\" must be a string");
  EXPECT_EQ(r.strings("mixed").error().message,
            "plan.json: action 1: \"mixed\" must be an array of strings");
  EXPECT_FALSE(r.count("minus"));
  EXPECT_FALSE(r.object("list"));
  EXPECT_FALSE(r.boolean("name"));
}

TEST(JsonFields, AbsentAndNullAreMissingUnlessOptional) {
  const JsonFields r = reader();
  EXPECT_EQ(r.string("absent").error().message, "plan.json: action 1: \"absent\" is missing");
  EXPECT_FALSE(r.string("nothing"));
  EXPECT_EQ(*r.string("nothing", Presence::optional), "");
  EXPECT_TRUE(r.strings("absent")->empty());
  EXPECT_TRUE((*r.array("absent", Presence::optional))->empty());
  EXPECT_EQ(*r.object("absent", Presence::optional), nullptr);
  EXPECT_EQ(*r.count("absent", Presence::optional), std::nullopt);
  EXPECT_TRUE(*r.boolean("absent", Presence::optional, true));
  EXPECT_FALSE(r.has("nothing"));
  EXPECT_TRUE(r.has("name"));
}

TEST(JsonFields, ANonObjectHasNoFields) {
  const nlohmann::json list = nlohmann::json::array();
  const JsonFields r(list, "x.json", ExitCode::error);
  EXPECT_EQ(r.string("name").error().message, "x.json: \"name\" is missing");
  EXPECT_EQ(r.string("name").error().code, ExitCode::error);
}

}  // namespace
}  // namespace venvfix
