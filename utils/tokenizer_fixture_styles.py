"""The newer tokenizer fixtures of make_tokenizer_fixtures.py: a Llama-3 tokenizer with its BOS
post-processor, SentencePiece-style BPE with byte fallback in the ways Llama 2, Mistral and
Gemma write it (and the Metaspace variants), added tokens with every flag, and NFKC.

Each builder returns a `tokenizers.Tokenizer`; `new_styles(corpus)` lists them by fixture name."""
import json
import random

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

META = "\u2581"  # SentencePiece's visible space

LLAMA3_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN2_REGEX = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
               r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")


def byte_level_trainer(vocab_size, special):
    return trainers.BpeTrainer(vocab_size=vocab_size, show_progress=False, special_tokens=special,
                               initial_alphabet=pre_tokenizers.ByteLevel.alphabet())


def llama3_bos(corpus):
    """Llama 3 as published: BOS <|begin_of_text|> added by a TemplateProcessing after ByteLevel."""
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus(), byte_level_trainer(600, ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]))
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|>:1 $B:1",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    return tok


KEPT_CHARACTERS = "\u00e9\u00ef\u00fc\u4e2d\u6587\u65e5\u672c\u0430\u0435\u2581\U0001F600"


def sentencepiece_model(corpus):
    """A BPE trained on "\u2581"-joined words, laid out as Llama 2's: <unk> <s> </s>, then the 256
    <0xXX> byte tokens, then the merged tokens. A small alphabet (ASCII and KEPT_CHARACTERS)
    leaves most non-ASCII characters to byte fallback."""
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend(META), normalizers.Replace(" ", META)])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="never", split=True)
    # A fixed small alphabet (rather than the trainer's limit_alphabet, whose ties fall in hash
    # order): the fixture is the same on every run.
    keep = set(KEPT_CHARACTERS)
    texts = ["".join(c for c in t if ord(c) < 0x80 or c in keep) for t in corpus()]
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=560, special_tokens=["<unk>", "<s>", "</s>"],
                                                       show_progress=False))
    model = json.loads(tok.to_str())["model"]
    trained = sorted(model["vocab"].items(), key=lambda kv: kv[1])
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for token, _ in trained:
        vocab.setdefault(token, len(vocab))
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in model["merges"]]
    return vocab, merges


def sentencepiece_tokenizer(corpus, bos=True):
    vocab, merges = sentencepiece_model(corpus)
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.add_special_tokens([AddedToken("<unk>", special=True, normalized=False),
                            AddedToken("<s>", special=True, normalized=False),
                            AddedToken("</s>", special=True, normalized=False)])
    if bos:
        tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s>:1 $B:1",
                                                           special_tokens=[("<s>", 1)])
    return tok


def sp_decoders(strip):
    steps = [decoders.Replace(META, " "), decoders.ByteFallback(), decoders.Fuse()]
    return decoders.Sequence(steps + ([decoders.Strip(content=" ", left=1, right=0)] if strip else []))


def llama2(corpus):
    """Llama 2 (legacy): Prepend + Replace normalizers, no pre-tokenizer, Strip of the prefix space."""
    tok = sentencepiece_tokenizer(corpus)
    tok.normalizer = normalizers.Sequence([normalizers.Prepend(META), normalizers.Replace(" ", META)])
    tok.decoder = sp_decoders(strip=True)
    return tok


def mistral(corpus):
    """Llama / Mistral as transformers 5 writes them: Metaspace(prepend_scheme="first", split=False)."""
    tok = sentencepiece_tokenizer(corpus)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="first", split=False)
    tok.decoder = sp_decoders(strip=True)
    return tok


def gemma(corpus):
    """Gemma: Replace(" ", "\u2581"), Split(" ", merged_with_previous), no prefix space."""
    tok = sentencepiece_tokenizer(corpus)
    tok.normalizer = normalizers.Replace(" ", META)
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous", invert=False)
    tok.decoder = sp_decoders(strip=False)
    return tok


def metaspace_always(corpus):
    tok = sentencepiece_tokenizer(corpus, bos=False)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="always", split=True)
    return tok


def metaspace_never(corpus):
    tok = sentencepiece_tokenizer(corpus, bos=False)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=META, prepend_scheme="never", split=False)
    tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="never", split=False)
    return tok


def metaspace_split(corpus):
    """Every behaviour of a literal Split before Metaspace(first): only the first piece of the
    text is at its start, so only it gets the prefix."""
    tok = sentencepiece_tokenizer(corpus)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(",", behavior="removed"), pre_tokenizers.Split("-", behavior="contiguous"),
        pre_tokenizers.Split(";", behavior="isolated"), pre_tokenizers.Split("!", behavior="merged_with_next"),
        pre_tokenizers.Split(".", behavior="merged_with_previous"),
        pre_tokenizers.Metaspace(replacement=META, prepend_scheme="first", split=True)])
    tok.decoder = decoders.Metaspace(replacement=META, prepend_scheme="first", split=True)
    return tok


def added_flags(corpus):
    """Byte-level BPE whose added tokens use lstrip, rstrip, single_word, normalized and special in
    combination, under a normaliser that changes tabs (so `normalized` matters), with
    RobertaProcessing (<s> A </s>) whose </s> is also the end of text."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Replace("\t", " ")])
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus(), byte_level_trainer(500, ["<s>", "</s>", "<pad>"]))
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True), AddedToken("<sep>", rstrip=True),
                            AddedToken("<both>", lstrip=True, rstrip=True),
                            AddedToken("sw", single_word=True, lstrip=True, rstrip=True)])
    tok.add_tokens([AddedToken("<nlstrip>", lstrip=True, normalized=True), AddedToken("word", single_word=True),
                    AddedToken("Word", single_word=True, normalized=False), AddedToken("[A]"), AddedToken("[A][B]"),
                    AddedToken("p\tq", normalized=True), AddedToken("x\ty", normalized=False),
                    AddedToken("cafe\u0301", normalized=True), AddedToken("caf", normalized=False, rstrip=True)])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")))
    return tok


def nfkc(corpus):
    """Qwen2-style byte-level BPE under NFKC, with a normalised added token holding a ligature."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(corpus(), byte_level_trainer(600, ["<|endoftext|>"]))
    tok.add_tokens([AddedToken("\ufb01x", normalized=True), AddedToken("\u2460", normalized=False)])
    return tok


def new_styles(corpus):
    builders = [llama3_bos, llama2, mistral, gemma, metaspace_always, metaspace_never, metaspace_split,
                added_flags, nfkc]
    return [(b.__name__, lambda b=b: b(corpus)) for b in builders]


def random_texts(count=60):
    """Random strings of what the newer pipelines treat specially: spaces and "\u2581", added
    tokens and their fragments, split marks, characters left to byte fallback."""
    rng = random.Random(13)
    pool = (list("ab wW ,-;!.\t\n") + [" ", "  ", META, META + META, "<s>", "</s>", "<s", "<mask>", "<sep>",
            "<both>", "<nlstrip>", "word", "sw", "[A]", "[B]", "p\tq", "x\ty", "caf\u00e9", "\ufb01x", "\u2460",
            "\u00e9", "e\u0301", "\u4e2d", "\U0001F600", "\u00a0", "\u3000", "\u00bd", "\u0663", "<0x41>", "the",
            "\u200d", "_"])
    return ["".join(rng.choice(pool) for _ in range(rng.randint(1, 14))) for _ in range(count)]
