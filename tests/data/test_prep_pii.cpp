// PII scrubbing: every kind found in its usual spellings, and ordinary text and code that looks
// alike (versions, dates, decimals, hex constants, slices, C++ scopes, invalid SSN ranges, cards
// failing Luhn) left alone.
#include <gtest/gtest.h>

#include "trident/data/pii.hpp"

namespace trident::data {
namespace {

std::string scrub(const std::string& text, PiiCounts* counts = nullptr) {
  PiiCounts local;
  return scrub_pii(text, counts ? *counts : local);
}

void expect_unchanged(const std::string& text) { EXPECT_EQ(scrub(text), text); }

TEST(Pii, FindsEmails) {
  PiiCounts c;
  EXPECT_EQ(scrub("write to john.smith+tag@mail.example.co.uk, or a_b@x.org.", &c), "write to <EMAIL>, or <EMAIL>.");
  EXPECT_EQ(c[PiiKind::kEmail], 2);
  expect_unchanged("@property\ndef f(self): return a @ b");
  expect_unchanged("user@localhost and x@y.1 and git@github");
}

TEST(Pii, FindsPhones) {
  PiiCounts c;
  EXPECT_EQ(scrub("call (415) 555-2671, 415-555-2671, 415.555.2671, +1 415 555 2671 or +44 20 7946 0958", &c),
            "call <PHONE>, <PHONE>, <PHONE>, <PHONE> or <PHONE>");
  EXPECT_EQ(c[PiiKind::kPhone], 5);
  EXPECT_EQ(scrub("1-800-555-0199"), "<PHONE>");
}

TEST(Pii, PhonesAreNotDatesVersionsDecimalsOrHex) {
  expect_unchanged("released 2024-01-15, version 3.11.4, pi = 3.14159265358979, x = 0x7fffffff");
  expect_unchanged("id 4155552671 and 12345678901");        // bare digit runs
  expect_unchanged("x = a + 12 - 345 + 6789");              // arithmetic
  expect_unchanged("range 123-456-78901 and 015-555-2671");  // wrong group sizes, area code 0
  expect_unchanged("version 1.2.3.4.5 and 10.0.0.256");
}

TEST(Pii, FindsIpAddresses) {
  PiiCounts c;
  EXPECT_EQ(scrub("hosts 192.168.0.1, http://10.0.0.7:8080/ and 2001:db8:85a3::8a2e:370:7334 or "
                  "fe80::1ff:fe23:4567:890a and 2001:0db8:0000:0000:0000:ff00:0042:8329",
                  &c),
            "hosts <IP>, http://<IP>:8080/ and <IP> or <IP> and <IP>");
  EXPECT_EQ(c[PiiKind::kIp], 5);
}

TEST(Pii, IpsAreNotVersionsSlicesOrScopes) {
  expect_unchanged("version 1.2.3.4, v1.2.3.4, Release: 4.3.2.1");
  expect_unchanged("oid 1.3.6.1.4.1 and 01.02.03.04");
  expect_unchanged("std::vector<int> Foo::bar dead::beef x[1::2] y[10::20] time 12:30:45");
  expect_unchanged("mac 00:1a:2b:3c:4d:5e");
}

TEST(Pii, FindsCreditCardsWithValidLuhn) {
  PiiCounts c;
  EXPECT_EQ(scrub("visa 4111 1111 1111 1111, mc 5555-5555-5555-4444, amex 378282246310005.", &c),
            "visa <CREDIT_CARD>, mc <CREDIT_CARD>, amex <CREDIT_CARD>.");
  EXPECT_EQ(c[PiiKind::kCreditCard], 3);
  EXPECT_TRUE(luhn_valid("79927398713"));
  EXPECT_FALSE(luhn_valid("79927398710"));
}

TEST(Pii, CardsNeedLuhnAndAnIssuer) {
  expect_unchanged("4111 1111 1111 1112");     // Luhn fails
  expect_unchanged("1234567812345670");        // Luhn passes, no issuer starts with 1
  expect_unchanged("0x4111111111111111");      // a hex constant
  expect_unchanged("3.4111111111111111");      // a decimal
  expect_unchanged("timestamp 1700000000000"); // no issuer
}

TEST(Pii, FindsSsnsOutsideTheNeverIssuedRanges) {
  PiiCounts c;
  EXPECT_EQ(scrub("ssn 123-45-6789.", &c), "ssn <NATIONAL_ID>.");
  EXPECT_EQ(c[PiiKind::kNationalId], 1);
  expect_unchanged("000-12-3456 666-12-3456 900-12-3456 123-00-4567 123-45-0000");
  expect_unchanged("123456789 and 123-45-67890 and 2023-45-6789");
}

TEST(Pii, LeavesPlainCodeAlone) {
  const std::string code =
      "def f(x, y=1.5e-3):\n    return x[1:10:2] + {'a': 0xFF, 'b': 1_000_000} @ y  # 2024-05-01\n"
      "__version__ = '3.12.0'\nTIMEOUT = 30.0\nRGB = (255, 128, 0)\n";
  expect_unchanged(code);
}

}  // namespace
}  // namespace trident::data
