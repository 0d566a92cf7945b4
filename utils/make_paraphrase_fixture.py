#!/usr/bin/env python3
"""The paraphrase fixture of `trident evalgen --paraphrase` (tests/cli/evalgen_paraphrase.sh): a
tiny Llama that has learned to reword evalgen prompts, with its own small byte-level BPE
tokenizer and a ChatML chat template, in tests/data/hf/paraphrase/. The fixture is regenerated
by this script alone (seeded: the same versions give the same files):

  /opt/ref/bin/python utils/make_paraphrase_fixture.py [--trident build/trident] [--steps N]

Made with torch 2.15.0, transformers 5.25.0, tokenizers 0.23.3 (CPU, 2 threads): 1500 steps of 32
examples in 10.6 minutes; a Llama of 3 layers, hidden 96, 4 heads, 393,888 parameters (float32,
tied embeddings), a 640-id byte-level BPE (digits split one by one), 1.6 MB in all. Its greedy
rewrites of 28 held-out easy cases kept every slot value and the cue for 22 (chat) and 21 (plain);
`trident evalgen --suite all --levels easy --n 3 --seed 3 --samples 3` keeps about half of its
sampled rewrites (the rest mostly miscopied random keys and letters).

Training pairs come from the template library itself: `trident evalgen` writes cases (easy and
medium, all suites; seeds 1001.. so the test's seeds are not trained on), each prompt's slots
are recovered by matching it against its template's wordings (input/eval/<suite>.json), and the
target is the same case in another wording: one of the library's or of BANK below (extra
wordings, so rewrites hold n-grams no template has), always ending with the source's own last
line (its answer cue). The source is the instruction trident sends (INSTRUCTION and the two
renderings below, the same text as src/data/evalgen/paraphrase_prompt.cpp) under the chat
template (<|im_start|>user ... <|im_end|>, the target ends with <|im_end|>) or, for half the
examples, the plain form (INSTRUCTION, a blank line, the prompt, "\n\nRewrite:\n"; the target
ends with <|endoftext|>), so both paths of trident's rendering produce rewrites. The loss is on
the target only. At the end, greedy rewrites of held-out cases are checked roughly (every slot
value kept verbatim, the cue kept, not the source itself) and the share printed.
"""
import argparse
import math
import json
import os
import random
import re
import subprocess
import tempfile
import time

import torch
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(root, "tests/data/hf/paraphrase")

# Must equal kParaphraseInstruction and the renderings of src/data/evalgen/paraphrase_prompt.cpp.
INSTRUCTION = ("Rewrite the question below in other words. Keep every number, key, name and list exactly as "
               "written, ask exactly the same thing, and end with the same last line.")
CHAT_TEMPLATE = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                 "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
                 "{% endif %}")
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
               r"|\s+(?!\S)|\s+")  # digits one by one: numbers are copied digit by digit


def chat_prompt(prompt):
    return "<|im_start|>user\n" + INSTRUCTION + "\n\n" + prompt + "<|im_end|>\n<|im_start|>assistant\n"


def plain_prompt(prompt):
    return INSTRUCTION + "\n\n" + prompt + "\n\nRewrite:\n"


# Extra wordings per (suite, template): each asks what the template asks, in words the
# verifier's rule accepts (the operation's words, the count's unit, the subtraction's order).
BANK = {
    ("arithmetic", "add"): [
        "Question: Find the sum of {a} and {b}.\nAnswer:", "Question: Add {a} and {b}. What is the total?\nAnswer:",
        "Question: What do you get when you add {a} to {b}?\nAnswer:", "Question: Calculate {a} + {b}.\nAnswer:",
        "Question: What is the total of {a} and {b}?\nAnswer:"],
    ("arithmetic", "subtract"): [
        "Question: Calculate {a} - {b}.\nAnswer:", "Question: What do you get if you subtract {b} from {a}?\nAnswer:",
        "Question: What is {a} minus {b}?\nAnswer:", "Question: Take {b} away from {a}. What is left?\nAnswer:",
        "Question: Find the difference {a} - {b}.\nAnswer:"],
    ("arithmetic", "multiply"): [
        "Question: Find the product of {a} and {b}.\nAnswer:", "Question: What is {a} multiplied by {b}?\nAnswer:",
        "Question: Calculate {a} * {b}.\nAnswer:", "Question: Multiply {a} by {b}. What is the result?\nAnswer:"],
    ("last_digit", "sum"): [
        "Question: What is the final digit of {expression}?\nAnswer:",
        "Question: Find the ones digit of the sum {expression}.\nAnswer:",
        "Question: Give the last digit of the sum {expression}.\nAnswer:"],
    ("last_digit", "product"): [
        "Question: What is the final digit of {expression}?\nAnswer:",
        "Question: Find the ones digit of the product {expression}.\nAnswer:",
        "Question: Give the last digit of the product {expression}.\nAnswer:"],
    ("copy", "letters"): [
        "Copy the following text exactly.\nText: {text}\nAnswer:", "Repeat this string exactly: {text}\nAnswer:",
        "Write this text again, exactly as it is: {text}\nAnswer:"],
    ("copy", "words"): [
        "Repeat these words exactly.\nWords: {text}\nAnswer:", "Copy the following words: {text}\nAnswer:",
        "Write these words again in the same order: {text}\nAnswer:"],
    ("reverse", "word"): [
        "Spell \"{text}\" backwards.\nAnswer:", "Question: What is \"{text}\" with its letters reversed?\nAnswer:",
        "Reverse the letters of the word {text}.\nAnswer:"],
    ("reverse", "list"): [
        "Write this list in reverse order: {items}\nAnswer:", "Question: What is the reverse of the list {items}?\nAnswer:",
        "List these items from last to first: {items}\nAnswer:"],
    ("sort", "numbers"): [
        "Arrange these numbers in ascending order: {items}\nAnswer:",
        "Question: What are the numbers {items} sorted from smallest to largest?\nAnswer:",
        "Put these numbers in increasing order: {items}\nAnswer:"],
    ("sort", "words"): [
        "Arrange these words in alphabetical order: {items}\nAnswer:",
        "Question: What is the list {items} sorted alphabetically?\nAnswer:",
        "Put these words in alphabetical order: {items}\nAnswer:"],
    ("kv_lookup", "number"): [
        "Here is a list of keys and values.\n{pairs}\nQuestion: What value does {key} have?\nAnswer:",
        "{pairs}\nQuestion: What is the value for the key {key}?\nAnswer:",
        "Look at these key-value pairs.\n{pairs}\nQuestion: Which value belongs to {key}?\nAnswer:"],
    ("date", "weekday_after"): [
        "Question: If today is {weekday}, what day of the week is it {days} days later?\nAnswer:",
        "Question: Today is {weekday}. Which weekday will it be {days} days from now?\nAnswer:",
        "Question: It is {weekday} today. What day will it be after {days} days?\nAnswer:"],
    ("date", "date_plus"): [
        "Question: Which date comes {days} days after {date}? Answer in YYYY-MM-DD.\nAnswer:",
        "Question: What date is {days} days after {date} (YYYY-MM-DD)?\nAnswer:",
        "Question: Add {days} days to {date}. What is the date (YYYY-MM-DD)?\nAnswer:"],
}
BANK[("kv_lookup", "word")] = BANK[("kv_lookup", "number")]


def library():
    """{(suite, template): [wording, ...]} of input/eval/."""
    out = {}
    for name in sorted(os.listdir(os.path.join(root, "input/eval"))):
        d = json.load(open(os.path.join(root, "input/eval", name)))
        for t in d.get("templates", []):
            out[(d["suite"], t["name"])] = t["prompts"]
    return out


def wording_regex(wording):
    parts = re.split(r"\{([a-z_]+)\}", wording)
    return re.compile("".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts)), re.S)


def split_cue(text):
    body, _, cue = text.rpartition("\n")
    return body, cue


def load_cases(trident, seeds, levels, n):
    """(suite, template, prompt, slots) of evalgen cases, the slots recovered from the wording."""
    lib = library()
    regexes = {k: [wording_regex(w) for w in v] for k, v in lib.items()}
    cases = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            path = os.path.join(tmp, f"cases_{seed}.jsonl")
            subprocess.run([trident, "evalgen", "--suite", "all", "--levels", levels, "--n", str(n), "--seed",
                            str(seed), "--output", path], check=True, cwd=root, stdout=subprocess.DEVNULL)
            for line in open(path):
                c = json.loads(line)
                key = (c["suite"], c["template"])
                for rx in regexes[key]:
                    m = rx.fullmatch(c["input"])
                    if m:
                        cases.append((key, c["input"], m.groupdict()))
                        break
                else:
                    raise SystemExit(f"no wording of {key} matches {c['input']!r}")
    return cases


def targets_for(key, prompt, slots, lib):
    """Every other wording of the case, ending with the source's own last line."""
    cue = split_cue(prompt)[1]
    out = []
    for w in lib[key] + BANK[key]:
        text = split_cue(w.format(**slots))[0] + "\n" + cue
        if text != prompt and text not in out:
            out.append(text)
    return out


def train_tokenizer(texts, vocab_size):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_REGEX), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIALS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    return tok


def encode_pair(tok, source, target):
    s = tok.encode(source).ids
    t = tok.encode(target).ids
    return s + t, [-100] * len(s) + t


def rough_keep(prompt, rewrite, slots):
    if rewrite.strip() == prompt or split_cue(rewrite)[1] != split_cue(prompt)[1]:
        return False
    return all(rewrite.count(v) == prompt.count(v) for v in slots.values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trident", default=os.path.join(root, "build/trident"))
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    random.seed(7)
    torch.manual_seed(7)
    torch.set_num_threads(2)
    lib = library()
    cases = load_cases(args.trident, range(1001, 1009), "easy", 60)
    cases += load_cases(args.trident, range(1101, 1103), "medium", 30)
    held_out = load_cases(args.trident, [2001], "easy", 4)
    print(f"{len(cases)} training cases, {len(held_out)} held out")

    corpus = []
    for key, prompt, slots in cases[::3]:
        for target in targets_for(key, prompt, slots, lib):
            corpus += [chat_prompt(prompt) + target + "<|im_end|>", plain_prompt(prompt) + target + "<|endoftext|>"]
    tok = train_tokenizer(corpus, 640)
    vocab = tok.get_vocab_size()
    eos, im_end = tok.token_to_id("<|endoftext|>"), tok.token_to_id("<|im_end|>")

    def example(case, rng):
        key, prompt, slots = case
        target = rng.choice(targets_for(key, prompt, slots, lib))
        if rng.random() < 0.5:
            return encode_pair(tok, chat_prompt(prompt), target + "<|im_end|>")
        return encode_pair(tok, plain_prompt(prompt), target + "<|endoftext|>")

    max_len = 320
    cfg = transformers.LlamaConfig(vocab_size=vocab, hidden_size=96, intermediate_size=256, num_hidden_layers=3,
                                   num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=512,
                                   bos_token_id=eos, eos_token_id=eos, tie_word_embeddings=True,
                                   rope_theta=10000.0)
    model = transformers.LlamaForCausalLM(cfg)
    print(f"model: {sum(p.numel() for p in model.parameters())} parameters, vocabulary {vocab}")
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 100) * max(0.05, 0.5 * (1 + math.cos(math.pi * s / args.steps))))
    rng = random.Random(11)
    batch = 32
    start = time.time()
    model.train()
    for step in range(args.steps):
        pairs = [example(rng.choice(cases), rng) for _ in range(batch)]
        pairs = [(i[:max_len], l[:max_len]) for i, l in pairs]
        width = max(len(i) for i, _ in pairs)
        ids = torch.tensor([i + [eos] * (width - len(i)) for i, _ in pairs])
        labels = torch.tensor([l + [-100] * (width - len(l)) for _, l in pairs])
        mask = torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i, _ in pairs])
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        if step % 50 == 0 or step == args.steps - 1:
            print(f"step {step} loss {loss.item():.4f} {time.time() - start:.0f} s", flush=True)
    minutes = (time.time() - start) / 60

    os.makedirs(args.out, exist_ok=True)
    model.eval()
    model.save_pretrained(args.out)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    with open(os.path.join(args.out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 512,
                   "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
                   "chat_template": CHAT_TEMPLATE}, f, indent=1)
    hf_tok = transformers.AutoTokenizer.from_pretrained(args.out)
    probe = "Question: What is 1 + 2?\nAnswer:"
    rendered = hf_tok.apply_chat_template([{"role": "user", "content": INSTRUCTION + "\n\n" + probe}], tokenize=False,
                                          add_generation_prompt=True)
    assert rendered == chat_prompt(probe), rendered

    kept = {"chat": 0, "plain": 0}
    for key, prompt, slots in held_out:
        for form, source, stop in [("chat", chat_prompt(prompt), im_end), ("plain", plain_prompt(prompt), eos)]:
            ids = torch.tensor([tok.encode(source).ids])
            with torch.no_grad():
                out = model.generate(ids, max_new_tokens=160, do_sample=False, eos_token_id=[eos, im_end],
                                     pad_token_id=eos)
            rewrite = tok.decode(out[0, ids.shape[1]:].tolist(), skip_special_tokens=True).split("\n\n")[0].strip()
            kept[form] += rough_keep(prompt, rewrite, slots)
    size = sum(os.path.getsize(os.path.join(args.out, f)) for f in os.listdir(args.out))
    print(f"trained {args.steps} steps in {minutes:.1f} min; greedy rewrites of {len(held_out)} held-out cases "
          f"roughly kept: chat {kept['chat']}, plain {kept['plain']}; {size} bytes in {args.out}")


if __name__ == "__main__":
    main()
