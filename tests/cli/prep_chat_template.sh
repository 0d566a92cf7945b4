#!/usr/bin/env bash
# `trident prep --template model` end to end: a tokenizer directory holding the Llama-3 fixture
# tokenizer.json and a tokenizer_config.json with Llama 3.1's published chat template; the
# shards' tokens and loss starts equal transformers' ids of the prompt and answer
# (tests/data/chat_templates/llama31.json), prep.json records "model", a conversation the
# template cannot split is exit 2 naming its line. Then eval.template = model (and auto through
# that prep.json) renders task prompts with the model directory's template: the GPT-2 fixture
# scores 100% exact match with a template that renders what the plain one does.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

tok="$work/llama31"
mkdir -p "$tok"
cp tests/data/tokenizers/llama3/tokenizer.json "$tok/"
python3 - tests/data/chat_templates/llama31.json "$tok" "$work/chats.jsonl" <<'PY'
import json, sys
fixture = json.load(open(sys.argv[1]))
config = dict(fixture["special_tokens"], chat_template=fixture["template"])
json.dump(config, open(sys.argv[2] + "/tokenizer_config.json", "w"))
with open(sys.argv[3], "w") as f:
    for name in ("single_turn", "system_multi_turn", "unicode", "multi_turn", "trailing_user"):
        f.write(json.dumps({"messages": fixture["cases"][name]["messages"]}, ensure_ascii=False) + "\n")
    f.write(json.dumps({"input": "Hello!", "output": "Hi there. How can I help?", "note": "single_turn again"}) + "\n")
PY
"$trident" prep --input "$work/chats.jsonl" --output "$work/sft" --tokenizer "$tok" --template model > "$work/prep.log" \
  || fail "prep --template model: $(cat "$work/prep.log")"
grep -q '"template":"model","chat_template":"'"$tok"'/tokenizer_config.json"' "$work/sft.prep.json" \
  || fail "prep.json: $(cat "$work/sft.prep.json")"

# The index (docs/design.md section 8) and the tokens against transformers' ids.
python3 - "$work/sft" tests/data/chat_templates/llama31.json "$tok/tokenizer.json" <<'PY'
import json, struct, sys
prefix, fixture, tokenizer = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
idx = open(prefix + ".idx", "rb").read()
assert idx[:8] == b"TRDNTIDX", idx[:8]
version, width, vocab, docs, total = struct.unpack_from("<IIQQQ", idx, 8)
arrays = 40 if version == 1 else 144  # version 2: the protection bytes come first
offsets = struct.unpack_from(f"<{docs + 1}Q", idx, arrays)
loss = struct.unpack_from(f"<{docs}Q", idx, arrays + 8 * (docs + 1))
data = open(prefix + ".bin", "rb").read()
tokens = struct.unpack(f"<{total}{'H' if width == 2 else 'I'}", data)
special = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
bos, end = special["<|begin_of_text|>"], special["<|end_of_text|>"]
# The {"input","output"} line is a user and an assistant message: it renders as single_turn.
names = ["single_turn", "system_multi_turn", "unicode", "multi_turn", "trailing_user", "single_turn"]
assert docs == len(names), f"{docs} documents, want {len(names)}"
for d, name in enumerate(names):
    case = fixture["cases"][name]
    doc = list(tokens[offsets[d]:offsets[d + 1]])
    want = case["prompt"]["ids"] + case["answer"]["ids"] + [end]
    assert doc == want, f"{name}: tokens differ from transformers'\n{doc}\n{want}"
    assert loss[d] == len(case["prompt"]["ids"]), f"{name}: loss start {loss[d]}, want {len(case['prompt']['ids'])}"
    assert doc.count(bos) == 1 and doc[0] == bos, f"{name}: want one BOS, at the start"
print(f"prep --template model: {docs} documents equal transformers' prompt and answer ids")
PY
"$trident" inspect "$work/sft" --decode 0 > "$work/doc0"
grep -q "Today Date: 26 Jul 2024" "$work/doc0" || fail "inspect --decode: $(cat "$work/doc0")"

expect_prep_error() {  # expect_prep_error PATTERN ARGS...: exit 2 and PATTERN in the message
  local pattern=$1 code
  shift
  set +e
  "$trident" prep "$@" > "$work/err" 2>&1; code=$?
  set -e
  [ "$code" -eq 2 ] || fail "prep $*: exit $code, want 2: $(cat "$work/err")"
  grep -qF -- "$pattern" "$work/err" || fail "prep $*: unclear message: $(cat "$work/err")"
}
# Mistral v0.3 puts the system message into the last user turn: no prompt/answer split exists.
mistral="$work/mistral"
mkdir -p "$mistral"
cp tests/data/tokenizers/gpt2/tokenizer.json "$mistral/"
python3 - tests/data/chat_templates/mistral_v03.json "$mistral" "$work/mistral.jsonl" <<'PY'
import json, sys
fixture = json.load(open(sys.argv[1]))
json.dump(dict(fixture["special_tokens"], chat_template=fixture["template"]), open(sys.argv[2] + "/tokenizer_config.json", "w"))
with open(sys.argv[3], "w") as f:
    f.write(json.dumps({"messages": fixture["cases"]["single_turn"]["messages"]}) + "\n")
    f.write(json.dumps({"messages": fixture["cases"]["system_multi_turn"]["messages"]}) + "\n")
PY
expect_prep_error "mistral.jsonl:2: chat template $mistral/tokenizer_config.json cannot be split at the last assistant message" \
  --input "$work/mistral.jsonl" --output "$work/m" --tokenizer "$mistral" --template model
"$trident" prep --input "$work/mistral.jsonl" --output "$work/m" --tokenizer "$mistral" --template model --skip-bad-lines \
  > "$work/m.log" 2>&1 || fail "--skip-bad-lines: $(cat "$work/m.log")"
grep -q "1 written; dropped 0 empty, 0 duplicates, 1 bad lines" "$work/m.log" || fail "skipped line: $(cat "$work/m.log")"
expect_prep_error "the byte tokenizer has no chat template" --input "$work/chats.jsonl" --output "$work/b" --template model
printf '{"chat_template": "{%% for m in messages %%}\\n{{ m.content | nosuchfilter }}{%% endfor %%}"}' > "$mistral/tokenizer_config.json"
expect_prep_error "chat template $mistral/tokenizer_config.json line 2: the filter 'nosuchfilter' is not supported" \
  --input "$work/chats.jsonl" --output "$work/b" --tokenizer "$mistral" --template model

# eval.template = model: GPT-2's fixture with a template that renders what "plain" does.
model="$work/gpt2chat"
cp -r tests/data/hf/gpt2 "$model"
echo '{"eos_token": "<|endoftext|>", "chat_template": "{% for m in messages %}{{ m[\"content\"] }}{% endfor %}"}' \
  > "$model/tokenizer_config.json"
common=(--model.init_from="$model" --model.seq_len=32 --eval.batch=2 --eval.max_new_tokens=6 --eval.task="$model/task.jsonl")
"$trident" eval "${common[@]}" --eval.template=model --log.run_dir="$work/run" > "$work/eval.log" \
  || fail "eval.template=model: $(cat "$work/eval.log")"
grep -q "exact match 100.00%" "$work/eval.log" || fail "eval.template=model: $(cat "$work/eval.log")"
# auto: the template data.train's prep.json names, now "model".
"$trident" prep --input "$model/task.jsonl" --output "$work/gpt2sft" --tokenizer "$model" --template model > /dev/null
"$trident" eval "${common[@]}" --data.train="$work/gpt2sft" --log.run_dir="$work/run" > "$work/auto.log" \
  || fail "eval.template=auto: $(cat "$work/auto.log")"
grep -q "exact match 100.00%" "$work/auto.log" || fail "eval.template=auto (model): $(cat "$work/auto.log")"
rm "$model/tokenizer_config.json"
set +e
"$trident" eval "${common[@]}" --eval.template=model --log.run_dir="$work/run" > "$work/err" 2>&1; code=$?
set -e
[ "$code" -eq 2 ] && grep -q "eval.template = model: no tokenizer_config.json or chat_template.jinja in" "$work/err" \
  || fail "eval.template=model without a template: exit $code: $(cat "$work/err")"
echo "prep_chat_template: ok"
