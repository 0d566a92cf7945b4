// PII scrubbing on a generated corpus: thousands of sentences, each holding one PII value of a
// known kind in a varied context (after "server", "host", "IP", "at", in URLs, log lines,
// parentheses, quotes, at line start and end), and as many holding one look-alike that must stay
// (versions, dates, decimals, OIDs, section numbers, MAC addresses, times, hex, image names,
// Luhn-failing card numbers, never-issued SSNs). The ground truth is the generator's: a sentence
// scrubs to its template with the kind's placeholder, a look-alike sentence to itself. Recall and
// false positives per kind are printed; the test asks for 100% and 0.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "trident/data/pii.hpp"

namespace trident::data {
namespace {

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  size_t below(size_t n) { return rng_() % n; }
  int between(int lo, int hi) { return lo + static_cast<int>(below(static_cast<size_t>(hi - lo + 1))); }
  template <class T>
  const T& pick(const std::vector<T>& v) { return v[below(v.size())]; }
  std::string digits(int n) {
    std::string s;
    for (int k = 0; k < n; ++k) s += static_cast<char>('0' + below(10));
    return s;
  }
  std::string hex(int n, bool upper) {
    static const char* kLower = "0123456789abcdef";
    static const char* kUpper = "0123456789ABCDEF";
    std::string s;
    for (int k = 0; k < n; ++k) s += (upper ? kUpper : kLower)[below(16)];
    return s;
  }

  std::string ipv4() {
    std::string s;
    for (int k = 0; k < 4; ++k) s += (k ? "." : "") + std::to_string(between(0, 255));
    return s;
  }
  std::string ipv6() {
    const bool upper = below(4) == 0;
    if (below(2) == 0) {  // all eight groups
      std::string s;
      for (int k = 0; k < 8; ++k) s += (k ? ":" : "") + hex(between(1, 4), upper);
      return s;
    }
    static const std::vector<std::string> kPrefixes = {"2001:db8", "fe80", "2a00:1450", "fd12:3456", "2001:0db8:85a3"};
    std::string s = pick(kPrefixes) + "::";
    const int tail = between(1, 4);
    for (int k = 0; k < tail; ++k) s += (k ? ":" : "") + hex(between(1, 4), upper);
    return s;
  }
  std::string email() {
    static const std::vector<std::string> kNames = {"john", "jane.doe", "a_b", "m.smith+news", "info", "x-y", "k.tanaka", "ops"};
    static const std::vector<std::string> kDomains = {"example.com", "mail.example.co.uk", "uni-bonn.de", "corp.io",
                                                      "test.org", "sub.domain.net", "lab.edu", "post.fr"};
    return pick(kNames) + (below(2) ? std::to_string(between(1, 99)) : "") + "@" + pick(kDomains);
  }
  std::string nxx() { return std::to_string(between(2, 9)) + digits(2); }
  std::string phone() {
    const std::string a = nxx(), b = nxx(), c = digits(4);
    switch (below(9)) {
      case 0: return "(" + a + ") " + b + "-" + c;
      case 1: return a + "-" + b + "-" + c;
      case 2: return a + "." + b + "." + c;
      case 3: return a + " " + b + " " + c;
      case 4: return "+1 " + a + " " + b + " " + c;
      case 5: return "1-" + a + "-" + b + "-" + c;
      case 6: return "+44 20 " + digits(4) + " " + digits(4);
      case 7: return "+49 30 " + digits(7 - static_cast<int>(below(2))) + "-" + digits(2);
      default: return "+33 " + std::to_string(between(1, 9)) + " " + digits(2) + " " + digits(2) + " " + digits(2) + " " + digits(2);
    }
  }
  // An issuer prefix, random digits and the Luhn check digit, printed in the card's grouping.
  std::string card() {
    static const std::vector<std::pair<std::string, int>> kIssuers = {
        {"4", 16}, {"51", 16}, {"55", 16}, {"2221", 16}, {"34", 15}, {"37", 15}, {"6011", 16}, {"65", 16}, {"3530", 16}, {"36", 14}};
    const auto& [prefix, length] = pick(kIssuers);
    std::string d = prefix + digits(length - static_cast<int>(prefix.size()) - 1);
    for (char check = '0'; check <= '9'; ++check)
      if (luhn_valid(d + check)) {
        d += check;
        break;
      }
    const int style = static_cast<int>(below(3));
    if (style == 0) return d;
    const char sep = style == 1 ? ' ' : '-';
    std::string s;
    for (size_t k = 0; k < d.size(); k += 4) s += (k ? std::string(1, sep) : "") + d.substr(k, 4);
    return s;
  }
  std::string ssn() {
    int area = between(1, 899);
    if (area == 666) area = 667;
    char buf[16];
    std::snprintf(buf, sizeof buf, "%03d-%02d-%04d", area, between(1, 99), between(1, 9999));
    return buf;
  }

 private:
  std::mt19937_64 rng_;
};

struct Context {
  std::string before, after;
};

// Where personal data shows up in text, logs, code and markup.
const std::vector<Context> kContexts = {
    {"The server ", " is down again."},    {"Our DNS server ", " answers slowly."},  {"host ", " unreachable"},
    {"IP: ", ""},                          {"IP address ", " was blocked."},        {"reach me at ", " tomorrow."},
    {"", " is what you need."},            {"Please see below:\n", ""},             {"(", ")"},
    {"[", "]"},                            {"'", "'"},                              {"\"", "\","},
    {"2024-05-01 12:00:03 INFO connect from ", " port 22"}, {"src=", " dst=gateway"},  {"contact: ", "."},
    {"\t", "\t"},                          {"- ", "\n- next"},                      {"at ", ", or later"},
    {"Served by ", " (primary)."},         {"observer ", " noted"},                 {"# ", "\n"},
    {"value = ", ";"},                     {"<td>", "</td>"},                       {"server:", " ok"},
};

struct Tally {
  int cases = 0, misses = 0;
};

TEST(PiiCorpus, EveryKindFoundInEveryContext) {
  Generator gen(20261201);
  struct Kind {
    PiiKind kind;
    std::function<std::string()> value;
    std::vector<Context> extra;  // contexts of this kind alone
    bool extra_only = false;     // E.164 without separators is a phone only in a tel:/sms: URI
  };
  const std::vector<Kind> kinds = {
      {PiiKind::kIp, [&] { return gen.ipv4(); }, {{"http://", ":8080/index.html"}, {"https://", "/api/v1"}, {"ssh root@", ""}}},
      {PiiKind::kIp, [&] { return gen.ipv6(); }, {{"http://[", "]:8080/"}, {"inet6 addr:", "/64 Scope:Link"}}},
      {PiiKind::kEmail, [&] { return gen.email(); }, {{"mailto:", ""}, {"<a href=\"mailto:", "\">mail</a>"}, {"From: Jane <", ">"}}},
      {PiiKind::kPhone, [&] { return gen.phone(); }, {{"tel:", ""}, {"Phone: ", " (office)"}}},
      {PiiKind::kPhone, [&] { return "+1" + gen.nxx() + gen.nxx() + gen.digits(4); }, {{"tel:", ""}, {"<a href=\"tel:", "\">call</a>"}, {"sms:", "?body=hi"}, {"callto:", ""}},
       /*extra_only=*/true},
      {PiiKind::kCreditCard, [&] { return gen.card(); }, {{"card no. ", " exp 12/27"}}},
      {PiiKind::kNationalId, [&] { return gen.ssn(); }, {{"SSN: ", ""}, {"ssn=", "&x=1"}}},
  };
  Tally tally[static_cast<int>(PiiKind::kCount)];
  int sentences = 0;
  for (const Kind& k : kinds) {
    std::vector<Context> contexts = k.extra_only ? std::vector<Context>{} : kContexts;
    contexts.insert(contexts.end(), k.extra.begin(), k.extra.end());
    for (const Context& c : contexts)
      for (int rep = 0; rep < 24; ++rep) {
        const std::string value = k.value();
        const std::string text = c.before + value + c.after;
        const std::string want = c.before + pii_placeholder(k.kind) + c.after;
        PiiCounts counts;
        const std::string got = scrub_pii(text, counts);
        Tally& t = tally[static_cast<int>(k.kind)];
        ++t.cases;
        ++sentences;
        if (got != want || counts.total() != 1) {
          ++t.misses;
          ADD_FAILURE() << pii_name(k.kind) << " missed: \"" << text << "\" -> \"" << got << "\"";
        }
      }
  }
  for (int k = 0; k < static_cast<int>(PiiKind::kCount); ++k)
    std::printf("recall %-12s %d/%d\n", pii_name(static_cast<PiiKind>(k)), tally[k].cases - tally[k].misses, tally[k].cases);
  EXPECT_GT(sentences, 3000);
}

TEST(PiiCorpus, LookAlikesStayInEveryContext) {
  Generator gen(7);
  auto version = [&] { return std::to_string(gen.between(0, 20)) + "." + std::to_string(gen.between(0, 20)) + "." +
                              std::to_string(gen.between(0, 40)) + "." + std::to_string(gen.between(0, 200)); };
  struct LookAlike {
    std::string name;
    std::function<std::string()> text;  // the whole look-alike, context included where it matters
  };
  const std::vector<LookAlike> kinds = {
      {"version", [&] { return gen.pick<std::string>({"version ", "Version: ", "v", "release ", "Release ", "ver. ", "build ",
                                                       "version number ", "firmware version is ", "rev ", "fw="}) + version(); }},
      {"version3", [&] { return std::to_string(gen.between(0, 20)) + "." + std::to_string(gen.between(0, 20)) + "." +
                                std::to_string(gen.between(0, 99)); }},
      {"section", [&] { return gen.pick<std::string>({"Section ", "section ", "§ ", "§", "Figure ", "Table ", "Chapter ",
                                                       "Eq. ", "Appendix ", "clause ", "step "}) + version(); }},
      {"oid", [&] { return gen.pick<std::string>({"OID ", "oid=", ""}) + "1.3.6.1.4.1." + std::to_string(gen.between(1, 60000)); }},
      {"oid4", [&] { return "OID " + gen.pick<std::string>({"2.5.4.3", "2.5.4.10", "1.2.840.113549"}); }},
      {"date", [&] {
         char b[32];
         const int y = gen.between(1990, 2030), m = gen.between(1, 12), d = gen.between(1, 28);
         switch (gen.below(4)) {
           case 0: std::snprintf(b, sizeof b, "%04d-%02d-%02d", y, m, d); break;
           case 1: std::snprintf(b, sizeof b, "%02d.%02d.%04d", d, m, y); break;
           case 2: std::snprintf(b, sizeof b, "%02d/%02d/%04d", m, d, y); break;
           default: std::snprintf(b, sizeof b, "%04d.%02d.%02d", y, m, d);
         }
         return std::string(b);
       }},
      {"time", [&] { return std::to_string(gen.between(0, 23)) + ":" + gen.digits(2) + ":" + gen.digits(2); }},
      {"decimal", [&] { return std::to_string(gen.between(0, 999)) + "." + gen.digits(gen.between(1, 12)); }},
      {"mac", [&] {
         std::string s;
         for (int k = 0; k < 6; ++k) s += (k ? ":" : "") + gen.hex(2, gen.below(2));
         return s;
       }},
      {"hex", [&] { return "0x" + gen.hex(gen.between(8, 16), false); }},
      {"scope", [&] { return gen.pick<std::string>({"std::vector<int>", "Foo::bar", "dead::beef", "x[1::2]", "y[10::20]", "::1", "a::b::c"}); }},
      {"image", [&] { return gen.pick<std::string>({"icon", "logo", "hero-banner", "btn_close"}) + "@" +
                             gen.pick<std::string>({"2x", "3x"}) + "." + gen.pick<std::string>({"png", "jpg", "webp", "svg"}); }},
      {"handle", [&] { return gen.pick<std::string>({"@property", "@media screen", "user@localhost", "npm i left-pad@1.3.0", "a @ b"}); }},
      {"digits", [&] { return gen.digits(gen.between(5, 12)); }},
      {"isbn", [&] { return "978-" + gen.digits(1) + "-" + gen.digits(2) + "-" + gen.digits(6) + "-" + gen.digits(1); }},
      {"zip", [&] { return gen.digits(5) + "-" + gen.digits(4); }},
      {"card_luhn_fails", [&] {
         std::string c = gen.card();
         char& last = c.back();
         last = static_cast<char>('0' + (last - '0' + 1) % 10);  // one off: the check digit fails
         return c;
       }},
      {"ssn_never_issued", [&] {
         char b[16];
         switch (gen.below(4)) {
           case 0: std::snprintf(b, sizeof b, "000-%02d-%04d", gen.between(1, 99), gen.between(1, 9999)); break;
           case 1: std::snprintf(b, sizeof b, "666-%02d-%04d", gen.between(1, 99), gen.between(1, 9999)); break;
           case 2: std::snprintf(b, sizeof b, "9%02d-%02d-%04d", gen.between(0, 99), gen.between(1, 99), gen.between(1, 9999)); break;
           default: std::snprintf(b, sizeof b, "%03d-00-%04d", gen.between(1, 899), gen.between(1, 9999));
         }
         return std::string(b);
       }},
      {"arithmetic", [&] { return "x = a + " + gen.digits(2) + " - " + gen.digits(3) + " + " + gen.digits(4); }},
  };
  // Contexts that are not themselves about addresses (a version after "server" is still a version).
  const std::vector<Context> contexts = {
      {"We shipped ", " last week."}, {"", " is what you need."}, {"(", ")"}, {"[", "]"}, {"'", "'"}, {"see ", "."},
      {"\t", "\n"}, {"- ", "\n"}, {"# ", ""}, {"value = ", ";"}, {"<td>", "</td>"}, {"Note: ", ", see above"},
  };
  int cases = 0, false_positives = 0;
  for (const LookAlike& k : kinds) {
    int mine = 0, wrong = 0;
    for (const Context& c : contexts)
      for (int rep = 0; rep < 16; ++rep) {
        const std::string text = c.before + k.text() + c.after;
        PiiCounts counts;
        const std::string got = scrub_pii(text, counts);
        ++mine;
        if (got != text) {
          ++wrong;
          ADD_FAILURE() << k.name << " scrubbed: \"" << text << "\" -> \"" << got << "\"";
        }
      }
    std::printf("false positives %-16s %d/%d\n", k.name.c_str(), wrong, mine);
    cases += mine;
    false_positives += wrong;
  }
  EXPECT_EQ(false_positives, 0);
  EXPECT_GT(cases, 3000);
}

}  // namespace
}  // namespace trident::data
