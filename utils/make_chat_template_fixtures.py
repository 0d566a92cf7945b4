#!/usr/bin/env python3
"""Chat template fixtures from transformers, for trident's Jinja interpreter (tests/data/test_chat_template.cpp).

  make_chat_template_fixtures.py [OUT_DIR]   (default tests/data/chat_templates)

Writes OUT_DIR/<name>.json for each published template of utils/chat_templates_published.py:
the template text, its special tokens, the fixture tokenizer and, for each conversation below,
what transformers' apply_chat_template(..., tokenize=False) renders with and without the
generation prompt, the prompt/answer split trident prep makes (the messages before the last
assistant one with the generation prompt; the rest of the whole rendering), and the ids of each
(encode(text, add_special_tokens=False)); a conversation the template refuses records the
exception's message instead. Also OUT_DIR/features.json: small templates exercising one feature
each, with jinja2's output (rendered as transformers renders: ImmutableSandboxedEnvironment,
trim_blocks, lstrip_blocks) or "error" when jinja2 raises.

strftime_now is pinned to 2024-07-26 00:00:00, the fixed time trident's strftime_now formats.
Run by hand (never by the build or the tests), with transformers 5.24 and jinja2, e.g. the
/opt/ref venv: /opt/ref/bin/python utils/make_chat_template_fixtures.py
"""
import datetime
import json
import os
import re
import sys

import jinja2
import transformers
from transformers import PreTrainedTokenizerFast
from transformers.utils import chat_template_utils

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chat_templates_published import TEMPLATES  # noqa: E402
from chat_template_features import FEATURES  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


class FixedDatetime(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return cls(2024, 7, 26, 0, 0, 0)


chat_template_utils.datetime = FixedDatetime  # what its strftime_now calls

U, A, S = "user", "assistant", "system"
CONVERSATIONS = {
    "single_turn": [(U, "Hello!"), (A, "Hi there. How can I help?")],
    "system_multi_turn": [(S, "You are a terse assistant."), (U, "What is 2+2?"), (A, "4."),
                          (U, "And 3+3?"), (A, "6.")],
    "multi_turn": [(U, "Name a colour."), (A, "Blue."), (U, "Another one,\nplease."), (A, "Green.\n"),
                   (U, "One more {{ not a tag }} 'quoted' \"too\""), (A, "Red {% raw %} \\n stays")],
    "unicode": [(S, "  Réponds en français.\u3000"), (U, "Grüße aus Köln \U0001F30D — 你好？\u00a0"),
                (A, "  Καλημέρα! Привет ✓ naïve  \n")],
    "empty_content": [(U, ""), (A, "")],
    "system_empty": [(S, ""), (U, "Hi"), (A, "")],
    "think": [(U, "Why is the sky blue?"),
              (A, "<think>\nRayleigh scattering.\n</think>\n\nBecause short wavelengths scatter more.")],
    "think_multi_turn": [(U, "2+2?"), (A, "<think>\nadd\n</think>\n\n4"), (U, "3+3?"),
                         (A, "<think>\nadd again\n</think>\n\n6")],
    "trailing_user": [(U, "First question"), (A, "First answer"), (U, "A follow-up")],
    "roles_not_alternating": [(U, "One"), (U, "Two"), (A, "Three")],
}


def messages_of(turns):
    return [{"role": r, "content": c} for r, c in turns]


def render(tok, template, messages, gen, tokens):
    try:
        return tok.apply_chat_template(messages, chat_template=template, tokenize=False,
                                       add_generation_prompt=gen, **tokens), None
    except jinja2.exceptions.TemplateError as e:
        return None, str(e)


def case(tok, template, tokens, turns):
    messages = messages_of(turns)
    out = {"messages": messages}
    ids = lambda text: tok.encode(text, add_special_tokens=False)
    for key, gen in (("with_generation_prompt", True), ("without_generation_prompt", False)):
        text, error = render(tok, template, messages, gen, tokens)
        if error is not None:
            out["error"] = error
            return out
        out[key] = {"text": text, "ids": ids(text)}
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    if last > 0:
        prompt, error = render(tok, template, messages[:last], True, tokens)
        whole = out["without_generation_prompt"]["text"]
        if error is not None:
            out["split_error"] = error
        elif not whole.startswith(prompt):
            out["split_error"] = "the whole rendering does not begin with the prompt"
        else:
            answer = whole[len(prompt):]
            out["prompt"] = {"text": prompt, "ids": ids(prompt)}
            out["answer"] = {"text": answer, "ids": ids(answer)}
    return out


def feature_cases():
    env = chat_template_utils._cached_compile_jinja_template("").environment
    out = []
    for name, template, context in FEATURES:
        entry = {"name": name, "template": template, "context": context}
        try:
            entry["output"] = env.from_string(template).render(**context)
        except Exception as e:  # jinja2's errors and the Python ones templates raise alike
            entry["error"] = f"{type(e).__name__}: {e}"
        out.append(entry)
    return out


def write_json(path, value):
    """Indented JSON with each list of ids on one line (the fixtures stay small and diffable)."""
    text = json.dumps(value, ensure_ascii=False, indent=1)
    text = re.sub(r'"ids": \[\s*(\d+(?:,\s*\d+)*)\s*\]', lambda m: '"ids": [' + re.sub(r"\s+", "", m.group(1)) + "]", text)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text + "\n")


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests/data/chat_templates")
    os.makedirs(out_dir, exist_ok=True)
    for name, (template, tokenizer, tokens) in TEMPLATES.items():
        path = os.path.join(ROOT, "tests/data/tokenizers", tokenizer, "tokenizer.json")
        # The special tokens go to the template as variables only: given to the tokenizer, those
        # missing from its vocabulary would be added to it and change the ids.
        tok = PreTrainedTokenizerFast(tokenizer_file=path)
        cases = {c: case(tok, template, tokens, turns) for c, turns in CONVERSATIONS.items()}
        fixture = {"template": template, "special_tokens": tokens, "tokenizer": f"tokenizers/{tokenizer}",
                   "transformers": transformers.__version__, "cases": cases}
        write_json(os.path.join(out_dir, f"{name}.json"), fixture)
        refused = [c for c, v in cases.items() if "error" in v or "split_error" in v]
        print(f"{name}: {len(cases)} conversations ({len(refused)} refused: {', '.join(refused) or '-'})")
    features = feature_cases()
    write_json(os.path.join(out_dir, "features.json"), {"jinja2": jinja2.__version__, "cases": features})
    print(f"features: {len(features)} templates ({sum('error' in c for c in features)} raise)")


if __name__ == "__main__":
    main()
