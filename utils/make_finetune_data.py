#!/usr/bin/python3
"""Data of the LoRA fine-tuning demo (utils/finetune_demo.sh): a task with exact answers.

The task is reversing a short random lowercase string: {"input": "reverse hello", "output":
"olleh"}. A byte-level model sees one letter per token, so the answer is a fixed, checkable
rearrangement of the prompt's bytes that the pretrained demo model (Python sources) cannot do
before fine-tuning (exact match ~0) and that LoRA on its projections learns in a few minutes of
CPU training. Strings are random letters (no dictionary needed), 3 to MAX_LEN long; no string is
in both files, and none reads as an English article ("a", "an", "the": SQuAD-style scoring drops
those words) either way round.

    /usr/bin/python3 utils/make_finetune_data.py [--seed 1234] [--train 4000] [--heldout 200]

Writes input/data/finetune/train.jsonl and input/data/finetune/heldout.jsonl (same lines for the
same arguments). trident prep renders them with the template finetune_demo.sh passes
("Q: {input}\\nA: {output}"), the loss on the answer only, end-of-text after it.
"""
import argparse
import json
import os
import random
import string

MIN_LEN, MAX_LEN = 3, 6
ARTICLES = {"a", "an", "the"}


def example(word):
    return {"input": "reverse " + word, "output": word[::-1]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--train", type=int, default=4000, help="training lines")
    parser.add_argument("--heldout", type=int, default=200, help="held-out lines")
    parser.add_argument("--min-len", type=int, default=MIN_LEN, help="shortest string")
    parser.add_argument("--max-len", type=int, default=MAX_LEN, help="longest string")
    parser.add_argument("--output", default="input/data/finetune", help="output directory")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    words, seen = [], set()
    while len(words) < args.train + args.heldout:
        word = "".join(rng.choice(string.ascii_lowercase)
                       for _ in range(rng.randint(args.min_len, args.max_len)))
        if word in seen or word in ARTICLES or word[::-1] in ARTICLES:
            continue
        seen.add(word)
        words.append(word)
    heldout, train = words[:args.heldout], words[args.heldout:]
    assert not set(heldout) & set(train)

    os.makedirs(args.output, exist_ok=True)
    for name, part in (("train", train), ("heldout", heldout)):
        path = os.path.join(args.output, name + ".jsonl")
        with open(path, "w") as f:
            for word in part:
                f.write(json.dumps(example(word)) + "\n")
        print(f"make_finetune_data: {len(part)} lines -> {path}")


if __name__ == "__main__":
    main()
