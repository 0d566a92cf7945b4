// evalgen suites `arithmetic` (a + b, a - b, a * b on integers whose digit counts grow with the
// level) and `last_digit` (the last digit of a sum or product of several terms).
// Parameters: arithmetic {"a", "b"}; last_digit {"terms": [...]}.
#include <string>

#include "suite_util.hpp"
#include "trident/core/error.hpp"
#include "trident/data/evalgen/suite.hpp"

namespace trident::data::evalgen {

namespace {

std::vector<ParamDef> digit_params() { return {{"digits_min", 1, 9, {}}, {"digits_max", 1, 9, {}}}; }

class ArithmeticSuite final : public Suite {
 public:
  const char* name() const override { return "arithmetic"; }
  std::vector<TemplateDef> templates() const override {
    std::vector<ParamDef> sub = digit_params();
    sub.push_back({"negative", 0, 1, {}});  // 1: b may exceed a (a negative result)
    return {{"add", digit_params(), {"a", "b"}}, {"subtract", sub, {"a", "b"}}, {"multiply", digit_params(), {"a", "b"}}};
  }
  int max_choices() const override { return 10; }

  Draw draw(const std::string& tmpl, const LevelParams& level, const std::vector<std::string>&, EvalRng& rng) const override {
    const int64_t lo = level.at("digits_min"), hi = level.at("digits_max");
    int64_t a = draw_with_digits(rng, rng.between(lo, hi)), b = draw_with_digits(rng, rng.between(lo, hi));
    if (tmpl == "subtract" && level.at("negative") == 0 && a < b) std::swap(a, b);
    Draw d;
    d.params = Json::object();
    d.params.append("a", Json(a));
    d.params.append("b", Json(b));
    d.slots = {{"a", std::to_string(a)}, {"b", std::to_string(b)}};
    return d;
  }

  std::vector<std::string> accepted(const std::string& tmpl, const Json& params) const override {
    const int64_t r = result(tmpl, params);
    std::vector<std::string> forms = {std::to_string(r)};
    if (r >= 1000 || r <= -1000) forms.push_back(with_commas(r));
    return forms;
  }

  std::vector<std::string> near_misses(const std::string& tmpl, const Json& params, const std::vector<std::string>&,
                                       EvalRng&) const override {
    const int64_t r = result(tmpl, params), a = params.at("a").as_int(), b = params.at("b").as_int();
    std::vector<std::string> out = integer_near_misses(r);
    if (tmpl == "multiply") {  // one partial product too many or too few
      out.insert(out.begin() + 2, {std::to_string(r + a), std::to_string(r - a), std::to_string(r + b)});
    }
    return out;
  }

  // The operation's words and no other's; a - b keeps a before b ("subtract b from a": after).
  RewordRule reword_rule(const std::string& tmpl, const Json& params) const override {
    RewordRule r;
    r.must_say = {operation_phrases(tmpl)};
    r.must_not_say = other_operation_phrases(tmpl);
    if (tmpl == "subtract")
      r.order.push_back({std::to_string(params.at("a").as_int()), std::to_string(params.at("b").as_int()),
                         {"from", "less than"}});
    return r;
  }

 private:
  static int64_t result(const std::string& tmpl, const Json& params) {
    const int64_t a = params.at("a").as_int(), b = params.at("b").as_int();
    TRIDENT_CHECK(a >= 0 && b >= 0 && a < 1000000000 && b < 1000000000, "operands ", a, ", ", b, " out of range");
    if (tmpl == "add") return a + b;
    if (tmpl == "subtract") return a - b;
    TRIDENT_CHECK(tmpl == "multiply", "arithmetic has no template ", tmpl);
    return a * b;
  }
};

class LastDigitSuite final : public Suite {
 public:
  const char* name() const override { return "last_digit"; }
  std::vector<TemplateDef> templates() const override {
    std::vector<ParamDef> p = digit_params();
    p.push_back({"terms_min", 2, 8, {}});
    p.push_back({"terms_max", 2, 8, {}});
    return {{"sum", p, {"expression"}}, {"product", p, {"expression"}}};
  }
  int max_choices() const override { return 10; }

  Draw draw(const std::string& tmpl, const LevelParams& level, const std::vector<std::string>&, EvalRng& rng) const override {
    std::vector<int64_t> terms(rng.between(level.at("terms_min"), level.at("terms_max")));
    std::vector<std::string> shown;
    for (int64_t& t : terms) {
      t = draw_with_digits(rng, rng.between(level.at("digits_min"), level.at("digits_max")));
      shown.push_back(std::to_string(t));
    }
    Draw d;
    d.params = Json::object();
    d.params.append("terms", int_array(terms));
    d.slots = {{"expression", join(shown, tmpl == "sum" ? " + " : " * ")}};
    return d;
  }

  std::vector<std::string> accepted(const std::string& tmpl, const Json& params) const override {
    return {std::to_string(last_digit(tmpl, params))};
  }

  std::vector<std::string> near_misses(const std::string& tmpl, const Json& params, const std::vector<std::string>&,
                                       EvalRng&) const override {
    const int64_t d = last_digit(tmpl, params);
    const std::vector<int64_t> terms = ints_of(params.at("terms"));
    // The other operation's digit and the last term's digit come first: the likely slips.
    std::vector<std::string> out = {std::to_string(last_digit(tmpl == "sum" ? "product" : "sum", params)),
                                    std::to_string(terms.back() % 10)};
    for (int64_t step : {1, 9, 2, 8, 3, 7, 4, 6, 5}) out.push_back(std::to_string((d + step) % 10));
    return out;
  }

  // The last digit (not the first, not a digit sum); the expression (kept verbatim as a slot)
  // fixes the operation, so no word of another may appear.
  RewordRule reword_rule(const std::string& tmpl, const Json&) const override {
    const std::string op = tmpl == "sum" ? "add" : "multiply";
    RewordRule r;
    r.must_say = {{"digit"}, {"last", "units", "unit", "ones", "final", "rightmost", "trailing"}};
    r.must_not_say = other_operation_phrases(op);
    for (const char* p : {"first", "leading", "leftmost", "tens", "hundreds", "thousands", "second", "digits"})
      r.must_not_say.push_back(p);
    return r;
  }

 private:
  static int64_t last_digit(const std::string& tmpl, const Json& params) {
    const std::vector<int64_t> terms = ints_of(params.at("terms"));
    TRIDENT_CHECK(terms.size() >= 2, "last_digit needs two terms");
    int64_t d = tmpl == "sum" ? 0 : 1;
    for (int64_t t : terms) {
      TRIDENT_CHECK(t >= 0, "negative term ", t);
      d = tmpl == "sum" ? (d + t % 10) % 10 : (d * (t % 10)) % 10;
    }
    TRIDENT_CHECK(tmpl == "sum" || tmpl == "product", "last_digit has no template ", tmpl);
    return d;
  }
};

}  // namespace

std::unique_ptr<Suite> make_arithmetic_suite() { return std::make_unique<ArithmeticSuite>(); }
std::unique_ptr<Suite> make_last_digit_suite() { return std::make_unique<LastDigitSuite>(); }

}  // namespace trident::data::evalgen
