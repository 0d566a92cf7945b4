#!/usr/bin/env python3
"""Tokenizer fixtures from the Hugging Face `tokenizers` library, and a check of trident's
own trained tokenizers against it.

  make_tokenizer_fixtures.py make [--out tests/data/tokenizers]
      Builds small tokenizers on a built-in corpus and saves each as <out>/<name>/tokenizer.json
      with <name>/expected.json: per hard-case text (and per random text) the ids of
      encode(text, add_special_tokens=False) and =True, both decoded, and the pair encodings.
      Byte-level BPE: gpt2, llama3, qwen2 (special and added tokens), fallback and unk
      (hand-built, byte_fallback and fused unknown), llama3_bos (TemplateProcessing BOS),
      added_flags (lstrip/rstrip/single_word/normalized, RobertaProcessing), nfkc. SentencePiece
      style BPE with <0xXX> byte fallback (tokenizer_fixture_styles.py): llama2, mistral, gemma,
      metaspace_always, metaspace_never, metaspace_split. <out>/expected.json holds the texts and
      the NFC / NFKC / pre-tokenisation cases.
  make_tokenizer_fixtures.py check --tokenizer T --input F --ids IDS
      Loads T (e.g. written by trident's BPE trainer) with `tokenizers`, encodes F's text and
      compares with IDS (whitespace-separated ids, as `trident bench tokenizer --dump-ids`
      writes them). Exit 1 on any difference.

Needs `pip install tokenizers` (e.g. python3 -m venv /opt/trident-fixtures-venv &&
/opt/trident-fixtures-venv/bin/pip install tokenizers)."""
import argparse
import json
import os
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

GPT2_REGEX = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
LLAMA3_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN2_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
               r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")

# The hard cases every fixture tokenizer is checked on.
TEXTS = [
    "Hello world! It's a test, isn't it? I'm sure we'll see; they've done it, you'd agree.",
    "IT'S LOUD: WE'LL SEE, THEY'VE, I'D, YOU'RE, She'S, don'T 'sup 'll' 're",
    "long s: it'\u017f here, and 'K",
    "Numbers: 1 12 123 1234 12345 123456 3.14159 1,000,000 2024-01-01 \u0663\u0664\u0665 \u00be \u216b x2y",
    "\u4e2d\u6587\u6d4b\u8bd5\uff1a\u4f60\u597d\uff0c\u4e16\u754c\uff01\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8"
    "\u3001\u30ab\u30bf\u30ab\u30ca\u3002\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc785\ub2c8\ub2e4.",
    "Emoji: \U0001F600\U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467 \U0001F1E9\U0001F1EA \u2764\ufe0f!",
    "Accents: caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m S\u00e3o Paulo Dvo\u0159\u00e1k",
    "Combining: cafe\u0301 nai\u0308ve A\u030a e\u0301\u0323 d\u0307\u0323 q\u0307\u0323 \u1100\u1161\u11a8 \u212b \u2126",
    "Whitespace:   three spaces,\ttab,\t\ttwo tabs,  \n  newline with spaces\n\n\nthree newlines   ",
    "Windows\r\nline\r\n\r\nendings \r\n",
    "trailing spaces   ",
    "   leading spaces",
    "\u00a0non-breaking\u00a0space and\u3000ideographic space and\u2003em space \u0085 nel",
    "Special <|endoftext|> inside text<|endoftext|>and glued<|endoftext|><|endoftext|>",
    "Added: <user> hi </user><user>x</user> [MASK] and  [MASK]  spaced, foo foobar foo. _foo",
    "Chat: <|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>",
    "Llama: <|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|><|end_of_text|>",
    "Normalised added: caf\u00e9 cafe\u0301 e\u0301x ex\u0301 na\u00eff nai\u0308f",
    "Punctuation!!! ??? ... --- === *** ``` {}[]() <html><body></body></html> !\n?\n\n.",
    "Code: def f(x):\n    return x**2  # comment\n\tif x: pass\n\n    \n",
    "URL https://example.com/path?q=1&b=2#frag and email a.b@c.de",
    "Mixed123abc ABC123 a1b2c3 _under_score__ x_1",
    "",
    " ",
    "\n",
    "  \n ",
    "Control chars \x01\x02\x7f and replacement \ufffd",
    "Greek \u03b1\u03b2\u03b3 \u0394 Cyrillic \u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440 Arabic "
    "\u0645\u0631\u062d\u0628\u0627 Hebrew \u05e9\u05dc\u05d5\u05dd Thai \u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35 "
    "Devanagari \u0928\u092e\u0938\u094d\u0924\u0947",
    "Math \u2211\u222b\u221a\u221e \u2260 \u2264 \u2265 \u00b1 \u00d7 \u00f7 \u2192 \u21d2 \u2200\u2203",
    "supercalifragilisticexpialidocious " + "a" * 300 + " " + "=" * 100 + " " + "ab" * 50,
    "A document.\n\nIt has paragraphs; some are short.\nOthers run on, and on, and on, until the line\n"
    "breaks.  Then    irregular   spacing.\r\n\tIndented with a tab.\n",
]

# Hard cases of the newer fixtures (kept out of the training corpus, so the older fixtures
# stay as they were): added tokens' flags, NFKC, SentencePiece's "\u2581" and <s>, byte fallback.
MORE_TEXTS = [
    "Added flags: a <mask> b  <mask>c\t<mask> <sep>  d <sep>\te <both>  <both> f\t<nlstrip> g <nlstrip>h",
    "Single words: word words sword word_ word\u00b2 word\u203f \u24b6word word\u200d \u00bdword 1word word1 "
    "\u2167word Word WORD word. (word) xWord Word_ sw-sw asw sw  end",
    "Longest: [A][B] [A][A] [A][B][B] p\tq p q x\ty x y caf\u00e9 cafe\u0301 <s>in</s>text<pad>",
    "NFKC: \ufb01x fix \u2460 \u2474 \u338f \uff76\uff9e \uff8a\uff9f \uff26\uff55\uff4c\uff4c \u1d43 x\u00b2 "
    "\u00bd \u2122 \u210c \u01c5 \ufdfa \u3231 \u1e9b\u0323 \u2002en\u2003em \u00a0nb \ufb00 \ufb03 "
    "\u1e9e \u00df \ufb05 \uff61 \uff65",
    "SentencePiece: \u2581 \u2581\u2581x meta\u2581space  two  spaces <s> bos </s> eos <unk> unk",
    "Byte fallback: \u00ff\u0100 \U0001F9EA \u0d15\u0d4d\u0d37 \U00010348 \x00 nul",
    "Split marks: a,b,,c--d---e;f;;g!h!!i.j..k , - ; ! .",
    " Leading space, then <s>  <s> and </s>",
    "\u2581leading metaspace",
]

# Pairs encoded with add_special_tokens=True (the pair template).
PAIRS = [["Hello world", "How are you?"], ["", "b"], ["a", ""], [" x", "y "]]

# The training corpus: the texts above and prose, so that merges form over all kinds of text.
PROSE = """The quick brown fox jumps over the lazy dog. Tokenizers split text into pieces and
merge frequent pairs of bytes into tokens. It's what they've always done; we'll see if it's
fast. Numbers like 2024, 3.14 and 1,000 appear often. def main():\n    return 0\n
Les na\u00efves caf\u00e9s de S\u00e3o Paulo et de Z\u00fcrich. Der schnelle braune Fuchs springt \u00fcber den faulen Hund.
\u4eca\u5929\u5929\u6c14\u5f88\u597d\u3002\u6211\u4eec\u53bb\u516c\u56ed\u5427\u3002\u65e5\u672c\u8a9e\u3082\u5c11\u3057\u3002 \u041f\u0440\u0438\u0432\u0435\u0442, \u043a\u0430\u043a \u0434\u0435\u043b\u0430? \U0001F600\U0001F600
"""


def corpus():
    return [PROSE] * 40 + TEXTS * 5


def save(tokenizer, directory, merges_as_strings=False):
    os.makedirs(directory, exist_ok=True)
    data = json.loads(tokenizer.to_str())
    if merges_as_strings:  # the older "a b" form, as in many published tokenizer.json files
        data["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in data["model"]["merges"]]
    path = os.path.join(directory, "tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
    return Tokenizer.from_file(path)


def train(tokenizer, vocab_size, special):
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, special_tokens=special,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(corpus(), trainer)


def gpt2_style():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    train(tok, 700, ["<|endoftext|>"])
    tok.add_tokens(["<user>", "</user>", AddedToken("foo", single_word=True)])
    tok.add_special_tokens([AddedToken("[MASK]", lstrip=True, rstrip=True)])
    return tok


def llama3_style():
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    train(tok, 800, ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
                     "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"])
    return tok


def qwen2_style():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    train(tok, 800, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    # "nai\u0308f" is not NFC itself: `tokenizers` matches it in its normalised form.
    tok.add_tokens(["caf\u00e9", AddedToken("e\u0301x", normalized=False), "nai\u0308f"])
    return tok


def nfc_cases(count=150):
    """Random strings heavy in what NFC acts on, with Python's NFC of each."""
    import random
    import unicodedata
    rng = random.Random(5)
    pool = (list("aeiouAEOdsqz ,.") + [chr(c) for c in range(0x300, 0x370)] + ["\u0323", "\u0338", "\u05b0", "\u093c"]
            + [chr(c) for c in (0xE9, 0xC5, 0x212B, 0x2126, 0xF900, 0x1E0B, 0x1E63, 0x0958, 0x2000, 0x1100, 0x1161,
                                0x11A8, 0xAC00, 0xAC01, 0x3099, 0x304B, 0x0CC6, 0x0CD5, 0x0627, 0x0653, 0x1F00)])
    cases = []
    for _ in range(count):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(1, 24)))
        cases.append([text, unicodedata.normalize("NFC", text)])
    return cases


def nfkc_cases(count=150):
    """Random strings heavy in compatibility characters, with Python's NFKC of each."""
    import random
    import unicodedata
    rng = random.Random(11)
    pool = (list("aeiAE1 ,.") + [chr(c) for c in range(0x300, 0x310)]
            + [chr(c) for c in (0xA0, 0xA8, 0xAA, 0xAF, 0xB2, 0xB4, 0xB5, 0xB8, 0xBD, 0x132, 0x13F, 0x149, 0x17F,
                                0x1C4, 0x1C5, 0x2B0, 0x2D8, 0x2DD, 0x344, 0x37A, 0x3D2, 0x1E9B, 0x1FBF, 0x1FEE, 0x2002,
                                0x2024, 0x2026, 0x2033, 0x2057, 0x2100, 0x2122, 0x2160, 0x2474, 0x2488, 0x24B6, 0x3000,
                                0x3099, 0x309B, 0x30AB, 0x3200, 0x3231, 0x32FF, 0x3300, 0x33FF, 0xFB01, 0xFB03,
                                0xFB1F, 0xFDFA, 0xFE30, 0xFF21, 0xFF76, 0xFF9E, 0xFF9F, 0xFFE3, 0x1D400, 0x1F100,
                                0x1F190, 0x2F800, 0xAC00, 0x1100, 0x1161, 0x11A8, 0xE9, 0x212B)])
    cases = []
    for _ in range(count):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(1, 20)))
        cases.append([text, unicodedata.normalize("NFKC", text)])
    return cases


def hand_built(byte_fallback):
    """A tiny BPE without most non-ASCII bytes in its vocabulary: what they become is decided
    by byte_fallback (<0xXX> tokens) or by the unknown token (fused when repeated)."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {"<|endoftext|>": 0}
    for ch in sorted(c for c in alphabet if ord(c) < 0x7F or c == "\u0120"):
        vocab[ch] = len(vocab)
    merges = [("\u0120", "t"), ("h", "e"), ("\u0120t", "he"), ("i", "n"), ("\u0120", "a")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    if byte_fallback:
        for b in range(256):
            vocab[f"<0x{b:02X}>"] = len(vocab)
        model = models.BPE(vocab, merges, byte_fallback=True)
    else:
        vocab["<unk>"] = len(vocab)
        model = models.BPE(vocab, merges, unk_token="<unk>", fuse_unk=True)
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(["<|endoftext|>"])
    return tok


def pretoken_cases(count=120):
    """Random strings of the characters the pre-tokenisation regexes treat differently, with
    the pieces each regex cuts them into (the regex engine of `tokenizers`)."""
    import random
    rng = random.Random(7)
    pool = (list("aZ09 _'sStTrReEvVmMlLdD.,!?\"-") + [" ", " ", "  ", "\t", "\r", "\n", "\r\n", "\u00a0", "\u3000",
            "\u2003", "\u0085", "\u000b", "\u017f", "\u00e9", "\u0301", "\u4e2d", "\u00bd", "\u0663", "\u2167",
            "\U0001F600", "\u200d", "\ufe0f", "\u05d0", "\u0e2a", "\u0e31", "123", "4567"])
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(1, 16))) for _ in range(count)]
    cases = {"texts": texts}
    for name, regex in [("gpt2", GPT2_REGEX), ("llama3", LLAMA3_REGEX), ("qwen2", QWEN2_REGEX)]:
        split = pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False)
        cases[name] = [[piece for piece, _ in split.pre_tokenize_str(t)] for t in texts]
    return cases


def make(out):
    from tokenizer_fixture_styles import new_styles, random_texts
    random_cases = random_texts()
    top = {"texts": TEXTS + MORE_TEXTS, "random_texts": random_cases, "nfc": nfc_cases(), "nfkc": nfkc_cases(),
           "pretokens": pretoken_cases(), "pairs": PAIRS}
    styles = [("gpt2", gpt2_style, True), ("llama3", llama3_style, False), ("qwen2", qwen2_style, False),
              ("fallback", lambda: hand_built(True), False), ("unk", lambda: hand_built(False), True)]
    styles += [(name, build, False) for name, build in new_styles(corpus)]
    for name, build, as_strings in styles:
        tok = save(build(), os.path.join(out, name), merges_as_strings=as_strings)
        expected = expected_of(tok, top["texts"])
        random_expected = expected_of(tok, random_cases)
        expected["random"] = {"ids": random_expected["ids"], "decoded": random_expected["decoded"]}
        expected["pairs"] = [tok.encode(a, b, add_special_tokens=True).ids for a, b in PAIRS]
        with open(os.path.join(out, name, "expected.json"), "w", encoding="utf-8") as f:
            json.dump(expected, f, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
        print(f"{name}: vocab {tok.get_vocab_size()}, {sum(map(len, expected['ids']))} ids over {len(top['texts'])} texts")
    with open(os.path.join(out, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(top, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")


def expected_of(tok, texts):
    """Per text: ids without and with the post-processor's special tokens, and both decoded."""
    ids = [tok.encode(t, add_special_tokens=False).ids for t in texts]
    ids_special = [tok.encode(t, add_special_tokens=True).ids for t in texts]
    return {"ids": ids, "ids_special": ids_special,
            "decoded": [tok.decode(i, skip_special_tokens=False) for i in ids],
            "decoded_special": [tok.decode(i, skip_special_tokens=False) for i in ids_special]}


def check(tokenizer_path, input_path, ids_path):
    tok = Tokenizer.from_file(tokenizer_path)
    with open(input_path, "rb") as f:
        text = f.read().decode("utf-8")
    with open(ids_path) as f:
        theirs = [int(x) for x in f.read().split()]
    ours = tok.encode(text, add_special_tokens=False).ids
    if ours == theirs:
        print(f"ok: tokenizers encodes {input_path} ({len(text)} chars) to the same {len(ours)} ids as trident")
        return 0
    first = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    print(f"DIFFERENT: tokenizers {len(ours)} ids, trident {len(theirs)}; first difference at {first}: "
          f"tokenizers {ours[first:first + 8]} trident {theirs[first:first + 8]}")
    return 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "tokenizers"))
    c = sub.add_parser("check")
    c.add_argument("--tokenizer", required=True)
    c.add_argument("--input", required=True)
    c.add_argument("--ids", required=True)
    args = parser.parse_args()
    if args.command == "make":
        make(args.out)
        return 0
    return check(args.tokenizer, args.input, args.ids)


if __name__ == "__main__":
    sys.exit(main())
