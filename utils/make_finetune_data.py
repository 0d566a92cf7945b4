#!/usr/bin/python3
"""Data of the LoRA fine-tuning demo (utils/finetune_demo.sh): a task with exact answers.

The default task (--task last-digit) is naming the last digit of a random number of 2 to 5
digits: {"input": "last digit of 48173", "output": "3"}. A byte-level model sees one digit per
token, so the answer is one byte of the prompt at a fixed distance from the answer (the digit just
before the line break): a local feature that rank-8 LoRA adapters on the demo model (pretrained on
Python sources) learn in ~150-200 steps, whereas the base model answers something else (exact
match near 0; chance is 10%). The held-out numbers are never in the training lines, so a high
held-out score is generalisation, not memorisation.

Other tasks, for experiments:
  --task parity    "is 48173 even?" -> "yes" / "no" (chance 50%; learnt as fast);
  --task reverse   "reverse hello" -> "olleh", random lowercase strings of 3 to 6 letters (LoRA
                   does not learn it in the demo's budget: exact match stays 0%, loss ~2.7 nats;
                   full fine-tuning does).
No answer is an English article ("a", "an", "the": SQuAD-style scoring drops those words).

    /usr/bin/python3 utils/make_finetune_data.py [--task last-digit] [--seed 1234] \\
        [--train 4000] [--heldout 200]

Writes input/data/finetune/train.jsonl and input/data/finetune/heldout.jsonl (same lines for the
same arguments). trident prep renders them with the template finetune_demo.sh passes
("Q: {input}\\nA: {output}"), the loss on the answer only, end-of-text after it.
"""
import argparse
import json
import os
import random
import string

ARTICLES = {"a", "an", "the"}
MIN_NUMBER, MAX_NUMBER = 10, 99999   # 2 to 5 digits
MIN_LEN, MAX_LEN = 3, 6              # reverse: string lengths


def draw(task, rng, args):
    """One (key, example) of the task; keys are unique across both files."""
    if task in ("last-digit", "parity"):
        number = str(rng.randint(MIN_NUMBER, MAX_NUMBER))
        if task == "last-digit":
            return number, {"input": "last digit of " + number, "output": number[-1]}
        return number, {"input": f"is {number} even?",
                        "output": "yes" if int(number[-1]) % 2 == 0 else "no"}
    word = "".join(rng.choice(string.ascii_lowercase)
                   for _ in range(rng.randint(args.min_len, args.max_len)))
    if word in ARTICLES or word[::-1] in ARTICLES:
        return None, None
    return word, {"input": "reverse " + word, "output": word[::-1]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=("last-digit", "parity", "reverse"), default="last-digit")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--train", type=int, default=4000, help="training lines")
    parser.add_argument("--heldout", type=int, default=200, help="held-out lines")
    parser.add_argument("--min-len", type=int, default=MIN_LEN, help="reverse: shortest string")
    parser.add_argument("--max-len", type=int, default=MAX_LEN, help="reverse: longest string")
    parser.add_argument("--output", default="input/data/finetune", help="output directory")
    args = parser.parse_args()

    rng = random.Random(args.seed)
    examples, seen = [], set()
    while len(examples) < args.train + args.heldout:
        key, ex = draw(args.task, rng, args)
        if key is None or key in seen:
            continue
        seen.add(key)
        examples.append(ex)
    heldout, train = examples[:args.heldout], examples[args.heldout:]
    assert not {e["input"] for e in heldout} & {e["input"] for e in train}

    os.makedirs(args.output, exist_ok=True)
    for name, part in (("train", train), ("heldout", heldout)):
        path = os.path.join(args.output, name + ".jsonl")
        with open(path, "w") as f:
            for ex in part:
                f.write(json.dumps(ex) + "\n")
        print(f"make_finetune_data: {len(part)} lines -> {path}")


if __name__ == "__main__":
    main()
