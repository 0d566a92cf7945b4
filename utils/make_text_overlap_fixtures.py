#!/usr/bin/env python3
"""Writes tests/data/text_overlap/pairs.jsonl: 400 prediction/reference pairs with the scores of
the reference packages, for tests/train/test_text_overlap.cpp:
  rouge1, rouge2, rougeL, rougeLsum   rouge-score's RougeScorer (use_stemmer=False) F-measures
  bleu                                sacrebleu's corpus_bleu([prediction], [[reference]]).score
then 60 lines with several references ({"prediction", "references", ...}: score_multi's best
F-measures and sacrebleu with every reference), and one last line {"corpus_bleu": ...}:
corpus_bleu over the 400 pairs (13a, exp smoothing).
The pairs are seeded random text built to reach the rules' corners: shared and reordered words,
numbers with points, commas and dashes, HTML entities, <skipped>, hyphenated line ends,
newline-separated sentences (ROUGE-Lsum), empty strings, punctuation runs, non-ASCII letters
(including U+0130 and U+212A, whose lowercase holds ASCII), CJK, emoji, Unicode spaces.
usage: /opt/ref-text/bin/python utils/make_text_overlap_fixtures.py [OUTPUT]
       (a venv with rouge-score==0.1.2 sacrebleu==2.4.3)
"""
import json
import pathlib
import random
import sys

import sacrebleu
from rouge_score import rouge_scorer

WORDS = ("the cat sat on mat a dog ran fast model data loss step token rank node "
         "Paris London 1990 3.14 1,000 e-mail state-of-the-art don't it's U.S. Dr. "
         "café naïve Straße İstanbul Kelvin ΚΑΛΗ Ωmega 東京 データ 😀 x2 GPT-2").split()
PIECES = [",", ".", "!", "?", ";", ":", "(", ")", "\"", "'", "-", "--", "...", "&amp;", "&lt;b&gt;", "&quot;",
          "<skipped>", "5-4", "10.5", "3,2", "a.b", "$", "%", "#1", "\u00a0", "\u2028", "\u3000", "\t", "K"]


def text(rng, base=None):
    if base is not None and rng.random() < 0.7:  # a variant of the reference: shared words
        words = base.split(" ")
        for _ in range(rng.randint(0, 4)):
            op = rng.random()
            if op < 0.3 and words:
                words.pop(rng.randrange(len(words)))
            elif op < 0.6:
                words.insert(rng.randint(0, len(words)), rng.choice(WORDS))
            elif len(words) > 1:
                i = rng.randrange(len(words) - 1)
                words[i], words[i + 1] = words[i + 1], words[i]
        return " ".join(words)
    if rng.random() < 0.04:
        return ""
    out = []
    for _ in range(rng.randint(1, 30)):
        r = rng.random()
        if r < 0.7:
            out.append(rng.choice(WORDS) + (rng.choice(PIECES) if rng.random() < 0.1 else ""))
        elif r < 0.85:
            out.append(rng.choice(PIECES))
        elif r < 0.95:
            out.append("\n")
        else:
            out.append("-\n")
    sep = rng.choice([" ", " ", " ", "", "  "])
    return sep.join(out) + rng.choice(["", "", " ", "\n", "  \t"])


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                       pathlib.Path(__file__).resolve().parent.parent / "tests/data/text_overlap/pairs.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(20261207)
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=False)
    predictions, references, lines = [], [], []
    for _ in range(400):
        reference = text(rng)
        prediction = text(rng, reference)
        s = scorer.score(reference, prediction)
        bleu = sacrebleu.corpus_bleu([prediction], [[reference]]).score
        lines.append({"prediction": prediction, "reference": reference,
                      **{k: v.fmeasure for k, v in s.items()}, "bleu": bleu})
        predictions.append(prediction)
        references.append(reference)
    corpus = sacrebleu.corpus_bleu(predictions, [references]).score
    for _ in range(60):  # several references each
        refs = [text(rng) for _ in range(rng.randint(2, 4))]
        prediction = text(rng, rng.choice(refs))
        s = scorer.score_multi(refs, prediction)
        bleu = sacrebleu.corpus_bleu([prediction], [[r] for r in refs]).score
        lines.append({"prediction": prediction, "references": refs, **{k: v.fmeasure for k, v in s.items()},
                      "bleu": bleu})
    lines.append({"corpus_bleu": corpus})
    out.write_text("".join(json.dumps(l, ensure_ascii=False) + "\n" for l in lines), encoding="utf-8")
    print(f"wrote {out}: 400 pairs and 60 with several references, corpus BLEU {corpus:.4f}")


if __name__ == "__main__":
    main()
