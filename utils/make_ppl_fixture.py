#!/usr/bin/env python3
"""Reference perplexities for `trident prep --ppl-model` (tests/cli/prep_perplexity.sh): the
tiny GPT-2 fixture (tests/data/hf/gpt2) scores a few texts with transformers, each cut into
windows of the model's 32 positions scored on their own, as trident's scorer does:
perplexity = exp(sum of next-token losses over all windows / their targets).
Writes tests/data/hf/gpt2_perplexity.jsonl ({"text", "perplexity"} per line).
  /opt/ref/bin/python utils/make_ppl_fixture.py
"""
import json
import math
import os

import torch
from tokenizers import Tokenizer
from transformers import AutoModelForCausalLM

root = os.path.join(os.path.dirname(__file__), "..")
model_dir = os.path.join(root, "tests/data/hf/gpt2")
model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float64).eval()
tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
window = model.config.n_positions
texts = [
    "The quick brown fox jumps over the lazy dog.",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n" * 3,
    "Perplexity is the exponential of the mean next-token loss; a window of thirty-two positions "
    "is scored on its own, and the losses of all windows are averaged together.",
]
with open(os.path.join(root, "tests/data/hf/gpt2_perplexity.jsonl"), "w") as out:
    for text in texts:
        ids = tokenizer.encode(text).ids
        loss, targets = 0.0, 0
        for at in range(0, len(ids) - 1, window):
            chunk = torch.tensor([ids[at:at + window]])
            if chunk.shape[1] < 2:
                continue
            with torch.no_grad():
                logits = model(chunk).logits[0]
            logp = torch.log_softmax(logits[:-1], dim=-1)
            loss -= logp.gather(1, chunk[0, 1:, None]).sum().item()
            targets += chunk.shape[1] - 1
        out.write(json.dumps({"text": text, "perplexity": math.exp(loss / targets)}) + "\n")
        print(f"{len(ids)} tokens: perplexity {math.exp(loss / targets):.6f}")
