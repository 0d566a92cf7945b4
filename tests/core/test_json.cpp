// JSON parser and writer: values of every kind, escapes and surrogate pairs, member order,
// error positions, strictness (RFC 8259), and parse(dump(x)) == x.
#include <gtest/gtest.h>

#include <string>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"

namespace trident {
namespace {

std::string parse_error(std::string_view text) {
  try {
    Json::parse(text);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Json, ParsesEveryKind) {
  const Json j = Json::parse(R"( {"a": null, "b": true, "c": -1.5e2, "d": "x", "e": [1, [2]], "f": {}} )");
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j.at("a").is_null());
  EXPECT_TRUE(j.at("b").as_bool());
  EXPECT_DOUBLE_EQ(j.at("c").as_number(), -150.0);
  EXPECT_EQ(j.at("d").as_string(), "x");
  ASSERT_EQ(j.at("e").as_array().size(), 2u);
  EXPECT_EQ(j.at("e").as_array()[1].as_array()[0].as_int(), 2);
  EXPECT_TRUE(j.at("f").as_object().empty());
  EXPECT_EQ(j.find("missing"), nullptr);
}

TEST(Json, KeepsMemberOrder) {
  const Json j = Json::parse(R"({"z": 1, "a": 2, "m": 3})");
  const auto& members = j.as_object();
  ASSERT_EQ(members.size(), 3u);
  EXPECT_EQ(members[0].first, "z");
  EXPECT_EQ(members[1].first, "a");
  EXPECT_EQ(members[2].first, "m");
}

TEST(Json, UnescapesStrings) {
  const Json j = Json::parse(R"(["a\"b\\c\/d\n\t", "\u00e9", "\ud83d\ude00", "\u0000"])");
  const auto& a = j.as_array();
  EXPECT_EQ(a[0].as_string(), "a\"b\\c/d\n\t");
  EXPECT_EQ(a[1].as_string(), "\xC3\xA9");
  EXPECT_EQ(a[2].as_string(), "\xF0\x9F\x98\x80");
  EXPECT_EQ(a[3].as_string(), std::string(1, '\0'));
}

TEST(Json, RoundTripsThroughDump) {
  Json j = Json::object();
  j.set("text", Json(std::string("line\nquote\" tab\t \x01 \xC3\xA9")));
  j.set("n", Json(int64_t{1234567890123}));
  j.set("x", Json(0.1));
  Json list = Json::array();
  list.push_back(Json(true));
  list.push_back(Json());
  j.set("list", std::move(list));
  const std::string text = j.dump();
  EXPECT_EQ(Json::parse(text).dump(), text);
  EXPECT_EQ(Json::parse(text).at("text").as_string(), "line\nquote\" tab\t \x01 \xC3\xA9");
  EXPECT_EQ(Json::parse(text).at("n").as_int(), 1234567890123);
  EXPECT_DOUBLE_EQ(Json::parse(text).at("x").as_number(), 0.1);
  EXPECT_NE(text.find("\"n\":1234567890123"), std::string::npos);
}

TEST(Json, DuplicateKeysKeepTheFirstForFind) {
  const Json j = Json::parse(R"({"k": 1, "k": 2})");
  EXPECT_EQ(j.as_object().size(), 2u);
  EXPECT_EQ(j.at("k").as_int(), 1);
}

TEST(Json, ParsesLargeObjectsInLinearTime) {
  std::string text = "{";
  for (int i = 0; i < 200000; ++i) text += (i ? ",\"" : "\"") + std::to_string(i) + "\":" + std::to_string(i);
  text += "}";
  const Json j = Json::parse(text);  // quadratic member insertion would take minutes here
  EXPECT_EQ(j.as_object().size(), 200000u);
  EXPECT_EQ(j.as_object().back().second.as_int(), 199999);
}

TEST(Json, SetReplacesExistingKey) {
  Json j = Json::object();
  j.set("k", Json(1));
  j.set("k", Json(2));
  EXPECT_EQ(j.as_object().size(), 1u);
  EXPECT_EQ(j.at("k").as_int(), 2);
}

TEST(Json, ErrorsNameLineAndColumn) {
  EXPECT_NE(parse_error("{\n  \"a\": tru\n}").find("line 2, column 8"), std::string::npos);
  EXPECT_NE(parse_error("[1, 2,]").find("expected a JSON value"), std::string::npos);
  EXPECT_NE(parse_error("{\"a\" 1}").find("':' after a key"), std::string::npos);
  EXPECT_NE(parse_error("\"abc").find("unterminated string"), std::string::npos);
  EXPECT_NE(parse_error("\"a\nb\"").find("control character"), std::string::npos);
  EXPECT_NE(parse_error("\"\\ud800x\"").find("surrogate"), std::string::npos);
  EXPECT_NE(parse_error("\"\\q\"").find("invalid escape"), std::string::npos);
  EXPECT_NE(parse_error("01").find("unexpected text"), std::string::npos);
  EXPECT_NE(parse_error("1e999").find("out of range"), std::string::npos);
  EXPECT_NE(parse_error("{} {}").find("unexpected text"), std::string::npos);
  EXPECT_NE(parse_error("").find("end of input"), std::string::npos);
  EXPECT_NE(parse_error(std::string(300, '[')).find("nesting"), std::string::npos);
}

TEST(Json, WrongKindIsAClearError) {
  const Json j = Json::parse(R"({"a": "text", "b": 1.5})");
  EXPECT_THROW(j.at("a").as_int(), ConfigError);
  EXPECT_THROW(j.at("b").as_int(), ConfigError);  // not integral
  EXPECT_THROW(j.at("c"), ConfigError);
  try {
    j.at("a").as_array();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("expected a JSON array, found string"), std::string::npos);
  }
}

TEST(Json, FindsInvalidUtf8) {
  EXPECT_EQ(invalid_utf8_at("plain \xC3\xA9 \xF0\x9F\x98\x80"), std::string_view::npos);
  EXPECT_EQ(invalid_utf8_at("ab\xC3"), 2u);            // truncated
  EXPECT_EQ(invalid_utf8_at("\xC0\x80"), 0u);          // overlong
  EXPECT_EQ(invalid_utf8_at("x\xED\xA0\x80"), 1u);     // surrogate
  EXPECT_EQ(invalid_utf8_at("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(invalid_utf8_at("\x80"), 0u);              // stray continuation
}

}  // namespace
}  // namespace trident
