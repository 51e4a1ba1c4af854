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

// Issue 40: duplicate keys and numbers beyond double range are refused with the JSON pointer where
// they stand; messages cannot be cut or drive a terminal.
std::string text_error(const std::string& text) {
  try {
    parse_json_text(text, "f.json");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JsonReader, DuplicateKeysAreRefusedWithTheirPointer) {
  EXPECT_EQ(text_error(R"({"a": 1, "a": 2})"), "f.json: /a: key given twice in one object");
  EXPECT_EQ(text_error(R"({"x": [{"b": 1}, {"c": {"d/e": 1, "d/e": 2}}]})"), "f.json: /x/1/c/d~1e: key given twice in one object");
  // The same key in two objects is no duplicate.
  EXPECT_EQ(text_error(R"({"x": {"a": 1}, "y": {"a": 1}, "z": [{"a": 1}, {"a": 2}]})"), "(no error)");
}

TEST(JsonReader, NumbersBeyondDoubleRangeNameTheirPointer) {
  EXPECT_EQ(text_error(R"({"t": {"g": 1e400}})"), "f.json: /t/g: a number beyond the range of a double (about 1.8e308)");
  EXPECT_EQ(text_error(R"({"t": [1, 2, -1e999]})"), "f.json: /t/2: a number beyond the range of a double (about 1.8e308)");
  EXPECT_EQ(text_error("1e400"), "f.json: /: a number beyond the range of a double (about 1.8e308)");
  EXPECT_EQ(text_error(R"({"t": 1.7e308})"), "(no error)");
}

TEST(JsonReader, ControlCharactersAreEscapedInMessages) {
  // A NUL from "\u0000" no longer ends the message; ESC and a bidi override are shown escaped.
  const ConfigError e(std::string("a\0b\x1b[2J\xe2\x80\xae" "c\xc2\x9b" "d\n", 15));
  EXPECT_EQ(std::string(e.what()), "a\\u0000b\\u001b[2J\\u202ec\\u009bd\n");
  EXPECT_EQ(printable("plain UTF-8: \xc3\xa9\xe2\x80\x94"), "plain UTF-8: \xc3\xa9\xe2\x80\x94");
}

}  // namespace
}  // namespace parasim
