#!/usr/bin/env python3
"""Reference results of lm-evaluation-harness for trident's log-likelihood tasks
(tests/cli/lmeval_tasks.sh): two tiny random Hugging Face models (GPT-2 with a byte-level BPE
tokenizer, Llama with a SentencePiece-style one that frames text with <s>) score two
multiple-choice tasks and one rolling-perplexity task, given to the harness as custom tasks over
the same JSONL files trident reads. Writes
  tests/data/hf/lmeval_gpt2/, tests/data/hf/lmeval_llama/   the models (+ tokenizer.json)
  tests/data/lmeval/{choice_qa,choice_complete,rolling}.jsonl
  tests/data/lmeval/expected.json   {model: {task: metrics + per-document log-likelihoods}}
  /opt/ref/bin/python utils/make_lmeval_fixtures.py     (torch, transformers, lm-eval)
"""
import json
import os
import shutil
import sys
import tempfile

import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_hf_fixtures import randomize  # noqa: E402

root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
data = os.path.join(root, "tests/data/lmeval")
SEQ = 64  # trident's model.seq_len and the harness's max_length


def make_model(kind, out):
    from tokenizers import Tokenizer
    src = {"gpt2": "gpt2", "llama": "llama2"}[kind]
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(root, "tests/data/tokenizers", src, "tokenizer.json"), out)
    vocab = Tokenizer.from_file(os.path.join(out, "tokenizer.json")).get_vocab_size(with_added_tokens=True)
    if kind == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=vocab, n_positions=SEQ, n_embd=32, n_layer=2, n_head=4,
                                      bos_token_id=0, eos_token_id=0)
        special = {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}
        model = transformers.GPT2LMHeadModel(cfg)
    else:
        cfg = transformers.LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=SEQ,
                                       bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
        special = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
        model = transformers.LlamaForCausalLM(cfg)
    randomize(model, {"gpt2": 11, "llama": 12}[kind], scale=0.25)  # large enough for no near-ties
    model.save_pretrained(out)
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": SEQ, **special}, f, indent=1)


def write_tasks():
    os.makedirs(data, exist_ok=True)
    qa = [
        ("Question: What is the capital of France?\nAnswer:", ["Paris", "London", "Rome", "Berlin"], 0),
        ("Question: Which number is even?\nAnswer:", ["7", "12", "9", "15"], 1),
        ("Question: What colour is the sky on a clear day?\nAnswer:", ["green", "blue", "red"], 1),
        ("Question: How many legs does a spider have?\nAnswer:", ["six", "eight", "ten", "four"], 1),
        ("The answer is ", ["yes", "no"], 0),  # trailing space: it moves to the continuation
        ("", ["import os", "print(x)", "def f():"], 2),  # empty context: the prefix token stands in
        ("Question: Which word is a verb?\nAnswer:", ["table", "run", "green", "slowly"], 1),
        ("Question: Pick the largest.\nAnswer:", ["3", "30", "300", "3000"], 3),
        ("Question: What do bees make?\nAnswer:", ["honey", "silk", "milk", "paper"], 0),
        ("Question: Where does the sun rise?\nAnswer:", ["in the east", "in the west", "north", "south"], 0),
        ("Question: Café is a word from which language?\nAnswer:", ["French", "Japanese", "Zulu"], 0),
        ("Question: What is 2 + 2?\nAnswer:", ["4", "5", "22", "four hundred"], 0),
        ("def add(a, b):\n    return", [" a + b", " a - b", "None", " a * b"], 0),
        ("Question: Which is a fruit?\nAnswer:", ["apple", "carrot", "potato", "onion"], 0),
        ("Question: What is frozen water?\nAnswer:", ["ice", "steam", "sand", "glass"], 0),
        ("Question: Opposite of hot?\nAnswer:", ["cold", "warm", "spicy", "bright"], 0),
    ]
    complete = [
        ("The cat sat on the", ["mat.", "moon, singing loudly to the stars.", "idea."], 0),
        ("She opened the door and", ["walked in.", "the.", "flew over the mountains with seven dragons."], 0),
        ("for i in range(10):\n   ", [" print(i)", " return", "pass pass pass pass"], 0),
        ("He poured the coffee into the", ["cup", "keyboard and then the printer", "sky"], 0),
        ("Naïve résumé writers often", ["forget details.", "évoluent.", "x"], 0),
        ("Water boils at one hundred degrees", ["Celsius.", "of sadness in the old library.", "ok"], 0),
        ("The train left the station at", ["noon.", "purple.", "the end of a very long and winding sentence."], 0),
        ("import numpy as", ["np", "pandas", "a very long module name that nobody uses"], 0),
        ("Once upon a time, there", ["was a king.", "is", "were many, many, many small grey stones in a field."], 0),
        ("The quick brown fox jumps over the", ["lazy dog.", "quick", "brown fox jumps over the lazy dog again."], 0),
        ("  Leading spaces, then", ["words.", "nothing", "more and more and more."], 0),
        ("Tabs\tand\tnew\nlines end here:\t", ["done", "not done at all, as it happens"], 0),
    ]
    with open(os.path.join(data, "choice_qa.jsonl"), "w") as f:
        for i, (c, ch, g) in enumerate(qa):
            f.write(json.dumps({"context": c, "choices": ch, "gold": g, "level": ["easy", "hard"][i % 2]}) + "\n")
    with open(os.path.join(data, "choice_complete.jsonl"), "w") as f:
        for c, ch, g in complete:
            f.write(json.dumps({"context": c, "choices": ch, "gold": g}) + "\n")
    texts = [
        "The quick brown fox jumps over the lazy dog.",
        "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n" * 4,
        "  Perplexity counts words split on whitespace;   runs of spaces\tand tabs count once.\n",
        "Naïve café owners serve crème brûlée — with a smile. " * 3,
        "One sentence.",
        "Rolling windows of sixty-four tokens each predict every token exactly once, the first "
        "window conditioned on the prefix token and the later ones on the tokens before them, so "
        "a long document like this one is split into several windows that the model scores on "
        "their own, and the log-likelihoods of all windows are added together.",
    ]
    with open(os.path.join(data, "rolling.jsonl"), "w") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")


def task_yaml(d, name, path, kind):
    head = (f"task: {name}\ndataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {path}\n"
            "test_split: test\n")
    if kind == "choice":
        body = ("output_type: multiple_choice\ndoc_to_text: context\ndoc_to_choice: choices\ndoc_to_target: gold\n"
                "metric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n"
                "  - metric: acc_norm\n    aggregation: mean\n    higher_is_better: true\n")
    else:
        body = ("output_type: loglikelihood_rolling\ndoc_to_text: ''\ndoc_to_target: text\n"
                "metric_list:\n  - metric: word_perplexity\n  - metric: byte_perplexity\n  - metric: bits_per_byte\n")
    with open(os.path.join(d, name + ".yaml"), "w") as f:
        f.write(head + body)


def evaluate(model_dir, yaml_dir, names):
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager
    lm = HFLM(pretrained=model_dir, dtype="float32", max_length=SEQ, batch_size=4, device="cpu")
    res = simple_evaluate(model=lm, tasks=list(names), task_manager=TaskManager(include_path=yaml_dir),
                          log_samples=True, num_fewshot=0)
    out = {}
    for task, file in names.items():
        metrics = {k.split(",")[0]: v for k, v in res["results"][task].items() if k.endswith(",none")}
        samples = sorted(res["samples"][task], key=lambda s: s["doc_id"])
        if file.startswith("rolling"):
            lls = [float(s["resps"][0][0]) for s in samples]
        else:
            lls = [[float(r[0][0]) for r in s["resps"]] for s in samples]
        out[file] = {"metrics": {k: float(v) for k, v in metrics.items() if "stderr" not in k}, "loglikelihoods": lls}
        print(model_dir, file, out[file]["metrics"])
    return out


def main():
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    write_tasks()
    expected = {}
    with tempfile.TemporaryDirectory() as yaml_dir:
        names = {}
        for file in ["choice_qa", "choice_complete", "rolling"]:
            name = "trident_" + file
            task_yaml(yaml_dir, name, os.path.join(data, file + ".jsonl"), "rolling" if file == "rolling" else "choice")
            names[name] = file
        for kind in ["gpt2", "llama"]:
            d = os.path.join(root, "tests/data/hf", "lmeval_" + kind)
            make_model(kind, d)
            expected[kind] = evaluate(d, yaml_dir, names)
    import lm_eval
    expected["lm_eval_version"] = lm_eval.__version__
    with open(os.path.join(data, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)


if __name__ == "__main__":
    main()
