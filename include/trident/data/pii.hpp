// PII scrubbing for `trident prep --scrub-pii`: personal data in training text is replaced by a
// placeholder per kind, and each replacement is counted. A hand-written scanner (no regex
// engine: it runs at hundreds of MB/s) that prefers missing a rare odd format over turning
// ordinary text and code into placeholders.
//
// What is matched (a match must not touch a letter, digit or '_' on either side):
//   <EMAIL>        local@domain.tld: local part of [A-Za-z0-9._%+-], dotted domain labels,
//                  an alphabetic TLD of 2+ letters that is not a file extension ("icon@2x.png"
//                  stays).
//   <PHONE>        with separators: "+CC ..." international numbers (8-15 digits in groups
//                  separated by ' ', '-' or '.'), and North American "(NXX) NXX-XXXX",
//                  "NXX-NXX-XXXX", "NXX.NXX.XXXX", "NXX NXX XXXX", optionally with a "1-"/"+1 "
//                  prefix (N = 2-9); without separators only as an E.164 number in a "tel:",
//                  "sms:" or "callto:" URI. Bare digit runs, dates (2024-01-15), versions (1.2.3)
//                  and decimals are not phones.
//   <IP>           IPv4 (four dotted octets 0-255, no leading zeros, not part of a longer dotted
//                  run, not right after a word that numbers things: "version 1.2.3.4",
//                  "Release: 4.3.2.1", "version number 1.2.3.4", "section 10.1.2.3", "OID 2.5.4.3",
//                  "§ 4.2.1.3" stay; whole words only, so "server 10.0.0.1" is an address); IPv6
//                  (eight hex groups, or a "::" form with at least two groups, at least one digit
//                  and one full 4-digit group, so C++ "Foo::bar", "dead::beef" and slices stay;
//                  the loopback "::1" alone is not matched; after ':' only when that ends a word,
//                  "addr:fe80::1").
//   <CREDIT_CARD>  13-19 digits, contiguous or in groups split by one consistent ' ' or '-',
//                  passing the Luhn check and starting with an issuer prefix (Visa 4, Mastercard
//                  51-55 / 2221-2720, Amex 34/37, Discover 6011/644-649/65, JCB 3528-3589,
//                  Diners 300-305/36/38). Not after "0x" (hex constants are not cards).
//   <NATIONAL_ID>  US social security numbers AAA-GG-SSSS with hyphens, excluding the ranges the
//                  SSA never issues: area 000, 666 and 900-999, group 00, serial 0000.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace trident::data {

enum class PiiKind { kEmail, kPhone, kIp, kCreditCard, kNationalId, kCount };

const char* pii_placeholder(PiiKind kind);  // "<EMAIL>", ...
const char* pii_name(PiiKind kind);         // "email", "phone", "ip", "credit_card", "national_id"

struct PiiCounts {
  int64_t count[static_cast<int>(PiiKind::kCount)] = {};
  int64_t& operator[](PiiKind k) { return count[static_cast<int>(k)]; }
  int64_t operator[](PiiKind k) const { return count[static_cast<int>(k)]; }
  int64_t total() const;
};

// `text` with every match replaced by its placeholder; counts incremented per replacement.
std::string scrub_pii(std::string_view text, PiiCounts& counts);

// Luhn checksum over the decimal digits of `digits` (other characters must be removed first).
bool luhn_valid(std::string_view digits);

}  // namespace trident::data
