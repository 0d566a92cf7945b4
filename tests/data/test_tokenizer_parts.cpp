// The pieces of the tokenizer pipeline against what `tokenizers` 0.23 and Python give for the
// same input: normalisers (NFKC against Python's unicodedata on random strings), the
// Metaspace and literal Split pre-tokenizers, the decoder steps, lossy UTF-8 and the word
// characters of single_word.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "trident/core/json.hpp"
#include "trident/data/decoder.hpp"
#include "trident/data/normalizer.hpp"
#include "trident/data/unicode.hpp"
#include "trident/data/word_split.hpp"

namespace trident::data {
namespace {

using V = std::vector<std::string>;
const std::string kMeta = "\xE2\x96\x81";  // ▁

V words(const std::vector<WordSplitStep>& steps, std::string_view text, bool at_start = true) {
  V out;
  split_words(steps, text, at_start, [&](std::string_view w) { out.emplace_back(w); });
  return out;
}

WordSplitStep literal(const std::string& pattern, WordSplitStep::Behavior behavior) {
  WordSplitStep s;
  s.kind = WordSplitStep::Kind::kLiteral;
  s.pattern = pattern;
  s.behavior = behavior;
  return s;
}

WordSplitStep metaspace(WordSplitStep::Prepend prepend, bool split) {
  WordSplitStep s;
  s.prepend = prepend;
  s.split = split;
  return s;
}

std::string m(std::string s) {  // "_" written for "▁"
  std::string out;
  for (char c : s) out += c == '_' ? kMeta : std::string(1, c);
  return out;
}

TEST(TokenizerParts, LiteralSplitBehaviours) {  // pre_tokenizers.Split(" ", behavior).pre_tokenize_str
  using B = WordSplitStep::Behavior;
  const std::string text = "  a  b c ";
  EXPECT_EQ(words({literal(" ", B::kRemoved)}, text), (V{"a", "b", "c"}));
  EXPECT_EQ(words({literal(" ", B::kIsolated)}, text), (V{" ", " ", "a", " ", " ", "b", " ", "c", " "}));
  EXPECT_EQ(words({literal(" ", B::kMergedWithPrevious)}, text), (V{" ", " ", "a ", " ", "b ", "c "}));
  EXPECT_EQ(words({literal(" ", B::kMergedWithNext)}, text), (V{" ", " a", " ", " b", " c", " "}));
  EXPECT_EQ(words({literal(" ", B::kContiguous)}, text), (V{"  ", "a", "  ", "b", " ", "c", " "}));
  EXPECT_EQ(words({literal("aa", B::kIsolated)}, "aaab"), (V{"aa", "ab"}));
  EXPECT_EQ(words({literal(" ", B::kRemoved)}, "ab"), (V{"ab"}));
}

TEST(TokenizerParts, Metaspace) {  // pre_tokenizers.Metaspace(prepend_scheme, split)
  using P = WordSplitStep::Prepend;
  const std::string text = "Hey   friend! " + kMeta + "x  ";
  EXPECT_EQ(words({metaspace(P::kAlways, true)}, text),
            (V{m("_Hey"), m("_"), m("_"), m("_friend!"), m("_"), m("_x"), m("_"), m("_")}));
  EXPECT_EQ(words({metaspace(P::kNever, true)}, text),
            (V{"Hey", m("_"), m("_"), m("_friend!"), m("_"), m("_x"), m("_"), m("_")}));
  EXPECT_EQ(words({metaspace(P::kFirst, false)}, text), (V{m("_Hey___friend!__x__")}));
  EXPECT_EQ(words({metaspace(P::kFirst, false)}, "a b", false), (V{m("a_b")}));  // after an added token
  EXPECT_EQ(words({metaspace(P::kAlways, false)}, m("__a")), (V{m("__a")}));   // already starts with ▁
  // Only the first piece of a Split is at the text's start.
  EXPECT_EQ(words({literal(".", WordSplitStep::Behavior::kMergedWithPrevious), metaspace(P::kFirst, true)}, "a.b c"),
            (V{m("_a."), "b", m("_c")}));
}

std::string decode(const std::vector<DecoderStep>& steps, V tokens) { return decode_tokens(steps, std::move(tokens)); }

std::string replacements(int n) {  // n times U+FFFD
  std::string out;
  for (int i = 0; i < n; ++i) out += "\xEF\xBF\xBD";
  return out;
}

DecoderStep step(DecoderStep::Kind kind) {
  DecoderStep s;
  s.kind = kind;
  return s;
}

TEST(TokenizerParts, DecoderSteps) {
  using K = DecoderStep::Kind;
  // ByteFallback: a run of byte tokens that is not UTF-8 becomes one U+FFFD per token; "<0x+F>"
  // is byte 15 (Rust's from_str_radix takes a sign).
  EXPECT_EQ(decode({step(K::kByteFallback)}, {"<0xE4>", "<0xB8>", "<0xAD>", "a", "<0xE4>", "<0xB8>", "<0xAD>", "<0xE4>",
                                              "<0x+F>", "<0x41>", "<0xzz>"}),
            "\xE4\xB8\xAD" "a" + replacements(6) + "<0xzz>");
  DecoderStep strip = step(K::kStrip);
  strip.strip_start = 1;
  EXPECT_EQ(decode({strip}, {"  a ", " b", " "}), " a b");
  strip.strip_start = 0;
  strip.strip_stop = 2;
  EXPECT_EQ(decode({strip}, {"  a  ", " b "}), "  a b");
  strip.strip_stop = 5;  // more than a token holds (`tokenizers` panics there): the whole token
  EXPECT_EQ(decode({strip}, {" ", "x"}), "x");
  DecoderStep meta = step(K::kMetaspace);
  meta.pattern = kMeta;
  EXPECT_EQ(decode({meta}, {m("__a_b"), m("_c"), m("x_")}), "ab cx ");  // every ▁ of the first token dropped
  meta.drop_first_replacements = false;                               // prepend_scheme "never"
  EXPECT_EQ(decode({meta}, {m("__a_b"), m("_c"), m("x_")}), "  a b cx ");
  DecoderStep replace = step(K::kReplace);
  replace.pattern = kMeta;
  replace.content = " ";
  EXPECT_EQ(decode({replace, step(K::kByteFallback), step(K::kFuse), strip}, {m("__Hi"), "<0x0A>", m("_there"), "<s>"}),
            "  Hi\n there<s>");
  EXPECT_EQ(decode({step(K::kByteLevel)}, {"a", "\xC4\xA0" "b"}), "a b");  // "Ġb"
}

TEST(TokenizerParts, LossyUtf8AsRust) {  // bytes.decode("utf-8", "replace"), as from_utf8_lossy
  const std::string r = "\xEF\xBF\xBD";
  auto lossy = [](std::string_view s) {
    std::string out;
    unicode::append_lossy_utf8(s, out);
    return out;
  };
  EXPECT_EQ(lossy("\xE4\xB8" "a"), r + "a");
  EXPECT_EQ(lossy("\xFF\xFE"), r + r);
  EXPECT_EQ(lossy("\xF0\x9F\x98"), r);
  EXPECT_EQ(lossy("\xED\xA0\x80x"), r + r + r + "x");  // a surrogate
  EXPECT_EQ(lossy("\xC0\xAF"), r + r);
  EXPECT_EQ(lossy("\xE0\x80\x80"), r + r + r);
  EXPECT_EQ(lossy("\xF4\x90\x80\x80"), r + r + r + r);
  EXPECT_EQ(lossy("a\xC3"), "a" + r);
  EXPECT_EQ(lossy("ok \xE4\xB8\xAD \xF0\x9F\x98\x80"), "ok \xE4\xB8\xAD \xF0\x9F\x98\x80");
}

TEST(TokenizerParts, Normalizers) {
  auto n = [](NormalizerStep::Kind kind, std::string pattern, std::string content) {
    return NormalizerStep{kind, std::move(pattern), std::move(content)};
  };
  const Normalizer llama2({n(NormalizerStep::Kind::kPrepend, "", kMeta), n(NormalizerStep::Kind::kReplace, " ", kMeta)});
  EXPECT_EQ(llama2.apply("a  b"), m("_a__b"));
  EXPECT_EQ(llama2.apply(""), "");  // Prepend leaves empty text alone
  EXPECT_EQ(Normalizer({n(NormalizerStep::Kind::kReplace, "aa", "b")}).apply("aaa"), "ba");
  std::string storage;  // unchanged text is not copied
  const std::string_view plain = "plain";
  EXPECT_EQ(Normalizer({n(NormalizerStep::Kind::kNfc, "", "")}).apply(plain, storage).data(), plain.data());
  // normalizers.NFKC().normalize_str
  EXPECT_EQ(unicode::nfkc("\xEF\xAC\x81 \xC2\xBD \xE2\x91\xA0 \xC2\xA0x"), "fi 1\xE2\x81\x84" "2 1  x");
  EXPECT_EQ(unicode::nfkc("\xEF\xBD\xB6\xEF\xBE\x9E"), "\xE3\x82\xAC");  // halfwidth ｶﾞ -> ガ
}

Json read_expected() {
  std::ifstream in(std::string(TRIDENT_TEST_DATA) + "/tokenizers/expected.json", std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

TEST(TokenizerParts, NfkcEqualsPython) {  // random strings of compatibility characters
  const Json expected = read_expected();
  int wrong = 0;
  for (const Json& c : expected.at("nfkc").as_array()) {
    const std::string& input = c.as_array().at(0).as_string();
    const std::string& want = c.as_array().at(1).as_string();
    EXPECT_EQ(unicode::nfkc(input), want) << input;
    wrong += unicode::nfkc(input) != want;
  }
  EXPECT_EQ(wrong, 0);
}

TEST(TokenizerParts, WordCharactersAsRustRegex) {  // \w = Alphabetic + M + Nd + Pc + Join_Control
  for (uint32_t cp : {uint32_t{'a'}, uint32_t{'Z'}, uint32_t{'7'}, uint32_t{'_'}, 0x2167u /* Ⅷ */, 0x24B6u /* Ⓐ */,
                      0x203Fu /* ‿ */, 0x200Du /* ZWJ */, 0x0301u /* combining acute */, 0x0663u /* Arabic 3 */})
    EXPECT_TRUE(unicode::is_word_char(cp)) << std::hex << cp;
  for (uint32_t cp : {uint32_t{' '}, uint32_t{'-'}, 0xB2u /* ² */, 0xBDu /* ½ */, 0x1F600u, unicode::kInvalid})
    EXPECT_FALSE(unicode::is_word_char(cp)) << std::hex << cp;
}

}  // namespace
}  // namespace trident::data
