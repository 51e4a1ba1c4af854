#include <gtest/gtest.h>

#include "sim/config/json_reader.h"

namespace parasim {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonReader, UnknownKeySuggestsTheClosest) {
  const Json j = Json::parse(R"({"schedule": "ddp", "scheudle": 1})");
  JsonObject o(j, "f.json", "/parallel");
  o.str("schedule");
  EXPECT_EQ(error_of([&] { o.finish(); }), "f.json: /parallel/scheudle: unknown key; did you mean \"schedule\"?");
}

TEST(JsonReader, TypeAndRangeErrorsNameThePointer) {
  const Json j = Json::parse(R"({"a": "x", "b": 0, "c": 1.5})");
  JsonObject o(j, "f.json", "");
  EXPECT_EQ(error_of([&] { o.integer("a", 1, 10); }), "f.json: /a: expected an integer in [1, 10], got a string");
  EXPECT_EQ(error_of([&] { o.integer("b", 1, 10); }), "f.json: /b: expected an integer in [1, 10], got 0");
  EXPECT_EQ(error_of([&] { o.integer("c", 1, 10); }), "f.json: /c: expected an integer in [1, 10], got 1.5");
  EXPECT_EQ(error_of([&] { o.str("missing"); }), "f.json: /missing: missing required key");
}

TEST(JsonReader, PointerEscapesSlashAndTilde) { EXPECT_EQ(pointer_child("/a", "b/c~d"), "/a/b~1c~0d"); }

TEST(JsonReader, MissingFileAndSyntaxErrorNameTheFile) {
  EXPECT_NE(error_of([] { read_json_file("/nonexistent/x.json"); }).find("x.json: cannot open file"), std::string::npos);
}

}  // namespace
}  // namespace parasim
