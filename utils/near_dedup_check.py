#!/usr/bin/env python3
"""Checks `trident prep --near-dedup` on a generated corpus with planted near duplicates.

The corpus: base documents of random words, and for some of them a planted variant made by
word substitutions, an inserted passage, reordered paragraphs (near duplicates, exact Jaccard of
the 5-word shingles >= 0.85) or heavy rewriting (Jaccard <= 0.7, must be kept). Reports:
  - precision and recall of the dropped variants against the planted near duplicates (>= 0.95);
  - the shards of 1, 2 and 4 ranks byte for byte (equal);
  - the kept set against a datasketch MinHash LSH run with the same bands, rows and shingles
    (documents in input order; one is dropped when the LSH finds a kept one like it), with the
    number of disagreements the two LSHs' false-negative rates allow;
  - prep throughput (MB/s) against datasketch's signatures and LSH alone on the same corpus.
Needs datasketch (pip install datasketch).
  utils/near_dedup_check.py [--trident build/trident] [--bases 3000] [--work DIR]
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

WORD = re.compile(rb"[A-Za-z0-9\x80-\xff]+")  # trident's word bytes (near_dedup.hpp)


def shingles(text: str, n: int = 5):
    words = [w.lower() for w in WORD.findall(text.encode())]
    if not words:
        return set()
    n = min(n, len(words))
    return {b" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def jaccard(a, b):
    return len(a & b) / len(a | b)


def generate(bases: int, seed: int):
    rng = random.Random(seed)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(20000)]

    def words(n):
        return [rng.choice(vocab) for _ in range(n)]

    def paragraphs(ws):
        cut = sorted(rng.sample(range(1, len(ws)), 3))
        return [ws[a:b] for a, b in zip([0] + cut, cut + [len(ws)])]

    def render(paras):
        return "\n\n".join(" ".join(p) for p in paras)

    docs, planted = [], []  # planted: (base index, variant index, kind, exact jaccard)
    for _ in range(bases):
        base = words(rng.randint(150, 400))
        base_paras = paragraphs(base)
        docs.append(render(base_paras))
        kind = rng.choice(["none", "none", "substitute", "insert", "reorder", "rewrite"])
        if kind == "none":
            continue
        if kind == "substitute":
            v = list(base)
            for k in rng.sample(range(len(v)), max(1, len(v) // rng.randint(80, 200))):
                v[k] = rng.choice(vocab)
            text = render(paragraphs(v))
        elif kind == "insert":
            at = rng.randint(0, len(base))
            v = base[:at] + words(rng.randint(3, len(base) // 25)) + base[at:]
            text = render(paragraphs(v))
        elif kind == "reorder":
            paras = list(base_paras)
            while paras == base_paras:
                rng.shuffle(paras)
            text = render(paras)
        else:  # rewrite: a third to a half of the words replaced
            v = list(base)
            for k in rng.sample(range(len(v)), len(v) // rng.randint(2, 3)):
                v[k] = rng.choice(vocab)
            text = render(paragraphs(v))
        j = jaccard(shingles(docs[-1]), shingles(text))
        if kind != "rewrite" and j < 0.85:
            continue  # planted near duplicates are clearly above the threshold
        if kind == "rewrite" and j > 0.7:
            continue
        planted.append((len(docs) - 1, len(docs), kind, j))
        docs.append(text)
    return docs, planted


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}{r.stderr}")
    return r.stdout


def kept_by_trident(trident, prefix, docs):
    out = run([trident, "inspect", prefix, "--decode", "all"])
    index = {d: i for i, d in enumerate(docs)}
    kept = set()
    for piece in out.split("<|endoftext|>"):  # generated documents neither start nor end with a newline
        text = piece.strip("\n")
        if text:
            kept.add(index[text])
    return kept


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trident", default="build/trident")
    ap.add_argument("--bases", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    from datasketch import MinHash, MinHashLSH

    work = args.work or tempfile.mkdtemp(prefix="near-dedup-")
    os.makedirs(work, exist_ok=True)
    docs, planted = generate(args.bases, args.seed)
    corpus = os.path.join(work, "corpus.jsonl")
    with open(corpus, "w") as f:
        for d in docs:
            f.write(json.dumps({"text": d}) + "\n")
    mb = os.path.getsize(corpus) / 1e6
    positives = {v for _, v, kind, _ in planted if kind != "rewrite"}
    print(f"corpus: {len(docs)} documents, {mb:.1f} MB; planted: "
          + ", ".join(f"{k} {sum(1 for p in planted if p[2] == k)}" for k in ["substitute", "insert", "reorder", "rewrite"]))

    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    files = {}
    for ranks in [1, 2, 4]:
        prefix = os.path.join(work, f"np{ranks}")
        cmd = [args.trident, "prep", "--input", corpus, "--output", prefix, "--near-dedup", "--split-mb", "0.5"]
        if ranks > 1:
            cmd = ["mpirun", "-np", str(ranks)] + cmd
        run(cmd, env=env)
        files[ranks] = b"".join(open(prefix + ext, "rb").read() for ext in [".bin", ".idx"])
    identical = files[1] == files[2] == files[4]
    summary = json.load(open(os.path.join(work, "np1.prep.json")))
    nd = summary["near_dedup"]
    bands, rows = nd["bands"], nd["rows"]
    seconds = summary["seconds"]  # prep's own time: reading to publishing, without MPI start-up

    kept = kept_by_trident(args.trident, os.path.join(work, "np1"), docs)
    dropped = set(range(len(docs))) - kept
    tp = len(dropped & positives)
    precision = tp / len(dropped) if dropped else 1.0
    recall = tp / len(positives)

    t = time.perf_counter()
    lsh = MinHashLSH(threshold=0.8, num_perm=128, params=(bands, rows))
    ref_kept = set()
    for i, d in enumerate(docs):
        m = MinHash(num_perm=128, seed=1)
        m.update_batch(list(shingles(d)))
        if lsh.query(m):
            continue
        lsh.insert(str(i), m)
        ref_kept.add(i)
    ref_seconds = time.perf_counter() - t

    # Each LSH misses a pair at Jaccard s with probability (1 - s^rows)^bands; trident's estimate
    # check rejects one more rarely. Expected disagreements: the pairs either side misses.
    miss = [(1 - j ** rows) ** bands for _, v, kind, j in planted if kind != "rewrite"]
    expected = sum(2 * m * (1 - m) for m in miss)
    disagree = len(kept ^ ref_kept)
    allowed = max(3, int(3 * expected + 0.01 * len(positives)))
    print(f"trident: {len(dropped)} dropped ({nd['candidate_pairs']} candidates, {nd['verified_pairs']} verified; "
          f"{bands} bands x {rows} rows): precision {precision:.4f}, recall {recall:.4f}")
    print(f"shards of 1, 2 and 4 ranks identical: {identical}")
    print(f"datasketch kept {len(ref_kept)}, trident {len(kept)}: {disagree} documents differ "
          f"(expected from the false-negative rates {expected:.1f}, allowed {allowed})")
    print(f"throughput on one core: trident prep --near-dedup {mb / seconds:.2f} MB/s (tokenising and writing included), "
          f"datasketch MinHash+LSH {mb / ref_seconds:.2f} MB/s: ratio {ref_seconds / seconds:.1f}x")
    ok = precision >= 0.95 and recall >= 0.95 and identical and disagree <= allowed
    print("near-dedup check:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
