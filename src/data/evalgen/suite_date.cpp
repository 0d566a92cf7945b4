// evalgen suite `date`: the weekday N days after a weekday, and the date N days after a date.
// Harder levels have larger N and must cross month ends, year ends or a 29 February.
// Parameters: weekday_after {"start": 0..6 (Monday = 0), "days"}; date_plus {"year", "month",
// "day", "days"}. Dates are proleptic Gregorian, counted as days since 0001-01-01.
#include <array>
#include <cstdio>

#include "suite_util.hpp"
#include "trident/core/error.hpp"
#include "trident/data/evalgen/suite.hpp"

namespace trident::data::evalgen {

namespace {

constexpr std::array<const char*, 7> kWeekdays = {"Monday", "Tuesday", "Wednesday", "Thursday",
                                                   "Friday", "Saturday", "Sunday"};
constexpr std::array<const char*, 12> kMonths = {"January", "February", "March",     "April",   "May",      "June",
                                                 "July",    "August",   "September", "October", "November", "December"};

struct Date {
  int64_t year, month, day;
};

bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int64_t month_days(int64_t y, int64_t m) {
  constexpr std::array<int64_t, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return kDays[m - 1] + (m == 2 && is_leap(y));
}

// Days before 1 January of year y (y >= 1): 365 a year plus the leap days of the years before.
int64_t days_before_year(int64_t y) { return 365 * (y - 1) + (y - 1) / 4 - (y - 1) / 100 + (y - 1) / 400; }

int64_t to_days(const Date& d) {
  int64_t n = days_before_year(d.year);
  for (int64_t m = 1; m < d.month; ++m) n += month_days(d.year, m);
  return n + d.day - 1;
}

Date from_days(int64_t n) {
  int64_t y = n / 366 + 1;  // at or below the year; step up while the next year starts by n
  while (days_before_year(y + 1) <= n) ++y;
  n -= days_before_year(y);
  int64_t m = 1;
  for (; n >= month_days(y, m); ++m) n -= month_days(y, m);
  return {y, m, n + 1};
}

std::string iso(const Date& d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lld", static_cast<long long>(d.year), static_cast<long long>(d.month),
                static_cast<long long>(d.day));
  return buf;
}

Date date_of(const Json& p) {
  const Date d = {p.at("year").as_int(), p.at("month").as_int(), p.at("day").as_int()};
  TRIDENT_CHECK(d.year >= 1 && d.year <= 9000 && d.month >= 1 && d.month <= 12 && d.day >= 1 &&
                    d.day <= month_days(d.year, d.month),
                "date: invalid date ", d.year, "-", d.month, "-", d.day);
  return d;
}

// Is there a 29 February in (start, end]: passed on the way, not the start itself?
bool spans_leap_day(int64_t start, int64_t end) {
  for (int64_t y = from_days(start).year; y <= from_days(end).year; ++y)
    if (is_leap(y)) {
      const int64_t leap_day = to_days({y, 2, 29});
      if (leap_day > start && leap_day <= end) return true;
    }
  return false;
}

class DateSuite final : public Suite {
 public:
  const char* name() const override { return "date"; }
  std::vector<TemplateDef> templates() const override {
    const std::vector<ParamDef> days = {{"days_min", 1, 100000, {}}, {"days_max", 1, 100000, {}}};
    std::vector<ParamDef> plus = days;
    plus.push_back({"year_min", 1600, 2400, {}});
    plus.push_back({"year_max", 1600, 2400, {}});
    // none: the result is in the start's month; month: in another month; year_or_leap: in
    // another year, or past a 29 February.
    plus.push_back({"crossing", 0, 0, {"none", "month", "year_or_leap"}});
    return {{"weekday_after", days, {"weekday", "days"}}, {"date_plus", plus, {"date", "days"}}};
  }
  int max_choices() const override { return 7; }  // seven weekdays

  Draw draw(const std::string& tmpl, const LevelParams& level, const std::vector<std::string>&, EvalRng& rng) const override {
    Draw d;
    d.params = Json::object();
    if (tmpl == "weekday_after") {
      const int64_t start = rng.between(0, 6), days = rng.between(level.at("days_min"), level.at("days_max"));
      d.params.append("start", Json(start));
      d.params.append("days", Json(days));
      d.slots = {{"weekday", kWeekdays[start]}, {"days", std::to_string(days)}};
      return d;
    }
    const std::string& crossing = level.text("crossing");
    for (int tries = 0;; ++tries) {
      TRIDENT_CONFIG_CHECK(tries < 10000, "date: date_plus: no start date in years ", level.at("year_min"), " to ",
                           level.at("year_max"), " with ", level.at("days_min"), " to ", level.at("days_max"),
                           " days satisfies crossing = ", crossing);
      Date s;
      s.year = rng.between(level.at("year_min"), level.at("year_max"));
      s.month = rng.between(1, 12);
      s.day = rng.between(1, month_days(s.year, s.month));
      const int64_t days = rng.between(level.at("days_min"), level.at("days_max"));
      const int64_t start = to_days(s), end = start + days;
      const Date e = from_days(end);
      const bool ok = crossing == "none"    ? e.year == s.year && e.month == s.month
                      : crossing == "month" ? e.year != s.year || e.month != s.month
                                            : e.year != s.year || spans_leap_day(start, end);
      if (!ok) continue;
      d.params.append("year", Json(s.year));
      d.params.append("month", Json(s.month));
      d.params.append("day", Json(s.day));
      d.params.append("days", Json(days));
      d.slots = {{"date", iso(s)}, {"days", std::to_string(days)}};
      return d;
    }
  }

  std::vector<std::string> accepted(const std::string& tmpl, const Json& params) const override {
    const int64_t days = params.at("days").as_int();
    TRIDENT_CHECK(days >= 0, "date: negative days ", days);
    if (tmpl == "weekday_after") {
      const int64_t start = params.at("start").as_int();
      TRIDENT_CHECK(start >= 0 && start < 7, "date: weekday ", start);
      return {kWeekdays[(start + days) % 7]};
    }
    TRIDENT_CHECK(tmpl == "date_plus", "date has no template ", tmpl);
    const Date e = from_days(to_days(date_of(params)) + days);
    const std::string month = kMonths[e.month - 1], day = std::to_string(e.day), year = std::to_string(e.year);
    return {iso(e), month + " " + day + ", " + year, day + " " + month + " " + year};
  }

  std::vector<std::string> near_misses(const std::string& tmpl, const Json& params, const std::vector<std::string>&,
                                       EvalRng&) const override {
    const int64_t days = params.at("days").as_int();
    std::vector<std::string> out;
    if (tmpl == "weekday_after") {  // the neighbouring days, the start day
      const int64_t right = (params.at("start").as_int() + days) % 7;
      for (int64_t step : {1, 6, 2, 5, 3, 4}) out.push_back(kWeekdays[(right + step) % 7]);
      out.insert(out.begin() + 2, kWeekdays[params.at("start").as_int()]);
      return out;
    }
    const int64_t end = to_days(date_of(params)) + days;
    const Date e = from_days(end);
    out = {iso(from_days(end + 1)), iso(from_days(end - 1))};  // off by a day first
    for (int64_t step : {1, -1}) {  // a month off, where that date exists
      const int64_t m = e.month + step, y = m < 1 ? e.year - 1 : m > 12 ? e.year + 1 : e.year;
      const Date other = {y, (m + 11) % 12 + 1, e.day};
      if (other.day <= month_days(other.year, other.month)) out.push_back(iso(other));
    }
    if (e.month != 2 || e.day != 29) out.push_back(iso({e.year + 1, e.month, e.day}));  // a year off
    for (int64_t step : {2, -2, 7, -7, 3, -3, 30, -30}) out.push_back(iso(from_days(end + step)));
    return out;
  }

  // Forward in time, by N days ("N days" kept), asking a weekday or a date as the template does.
  RewordRule reword_rule(const std::string& tmpl, const Json& params) const override {
    RewordRule r;
    r.must_say = {{"after", "later", "from now", "from", "ahead", "hence", "following", "in", "plus", "add"}};
    r.must_not_say = {"ago",  "before", "earlier", "prior", "previous", "back",   "minus",    "subtract",
                      "hour", "hours",  "weeks",   "month", "months",   "year",   "years",    "business",
                      "working", "weekdays", "weekend", "weekends"};
    r.must_not_say.push_back(tmpl == "weekday_after" ? "date" : "weekday");
    if (tmpl == "date_plus") r.must_not_say.push_back("day of the week");
    r.units.push_back({std::to_string(params.at("days").as_int()), {"day", "days"}});
    return r;
  }
};

}  // namespace

std::unique_ptr<Suite> make_date_suite() { return std::make_unique<DateSuite>(); }

}  // namespace trident::data::evalgen
