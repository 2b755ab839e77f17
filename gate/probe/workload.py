"""The request mix a probe sends: prompts of stated token lengths, or the user's own prompts.

Why the engine's tokenizer: "a 2,000-token prompt" means 2,000 tokens of *this* model's
tokenizer; words or characters are a different length on every tokenizer. Where the engine
offers `POST /tokenize` (vLLM), a fixed repetitive text is tokenized and cut to exactly the
stated number of ids, which are sent as the prompt (both engines accept a list of token ids);
`prompts_from` says "engine_tokenizer". Where it does not, prompts are that many words
("approximate_words") and the engine's own `usage.prompt_tokens` tells the real length.
The text repeats, so prompt lookup (ngram) has something to find — as real chat and code
traffic does; use `--prompts FILE.jsonl` to probe with your own traffic (seed 002: "Set the
acceptance target from your traffic").

Each request index gets its own prompt (the text is rotated by the index), so requests of one
cell do not share a prefix; repetitions reuse the same prompts in both arms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import requests

from gate.probe.record import MixSpec, ProbeError

WORDS = ("the quick brown fox jumps over the lazy dog speculative decoding draft target token accept "
         "reject cache block prefix prompt generation metrics one two three four five six seven eight "
         "nine ten").split()
MAX_JSONL_LINES = 10_000


@dataclass(frozen=True)
class Mix:
    """One mix with the prompts its requests cycle through (text or token ids)."""

    spec: MixSpec
    prompts: tuple[str | tuple[int, ...], ...]

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def output_tokens(self) -> int:
        return self.spec.output_tokens


def base_text(index: int, words: int) -> str:
    """A repetitive text of `words` words, rotated by `index` so each request differs."""
    seq = [WORDS[(index * 5 + j) % len(WORDS)] for j in range(12)]
    return " ".join(seq[j % len(seq)] for j in range(words))


def tokenize(base_url: str, model: str, text: str, timeout: float,
             api_key: str | None = None) -> list[int] | None:
    """vLLM's `POST /tokenize` → token ids; None when the engine has no such endpoint."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        r = requests.post(f"{base_url}/tokenize", json={"model": model, "prompt": text},
                          headers=headers, timeout=timeout)
    except requests.RequestException as e:
        raise ProbeError(f"{base_url}/tokenize: {type(e).__name__}: {e}") from None
    if r.status_code in (404, 405):
        return None
    if r.status_code != 200:
        raise ProbeError(f"{base_url}/tokenize answered HTTP {r.status_code}: {r.text[:200]}")
    try:
        tokens = r.json()["tokens"]
    except (ValueError, KeyError, TypeError):
        raise ProbeError(f"{base_url}/tokenize: no 'tokens' list in the answer") from None
    if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
        raise ProbeError(f"{base_url}/tokenize: 'tokens' is not a list of ids")
    return tokens


def token_prompts(base_url: str, model: str, prompt_tokens: int, count: int, timeout: float,
                  api_key: str | None = None) -> tuple[tuple[str | tuple[int, ...], ...], str]:
    """`count` prompts of exactly `prompt_tokens` ids (or words where the engine cannot tokenize)."""
    prompts: list[str | tuple[int, ...]] = []
    for i in range(count):
        words = prompt_tokens + 8
        ids = tokenize(base_url, model, base_text(i, words), timeout, api_key)
        if ids is None:
            return tuple(base_text(j, prompt_tokens) for j in range(count)), "approximate_words"
        while len(ids) < prompt_tokens:  # BPE merges: fewer ids than words; grow and retry
            words *= 2
            longer = tokenize(base_url, model, base_text(i, words), timeout, api_key) or []
            if len(longer) <= len(ids):
                raise ProbeError(f"{base_url}/tokenize returns {len(ids)} ids however long the text; "
                                 f"cannot build a {prompt_tokens}-token prompt")
            ids = longer
        prompts.append(tuple(ids[:prompt_tokens]))
    return tuple(prompts), "engine_tokenizer"


def jsonl_mixes(path: str | Path, output_tokens: int | None) -> list[Mix]:
    """The user's prompts: one JSON object per line, `{"prompt": str, "mix"?: str, "max_tokens"?: int}`.

    Lines of one `mix` (default "jsonl") form one mix; its output length is `--output-tokens`, else
    the lines' `max_tokens` (which must then agree within the mix).
    """
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ProbeError(f"{p}: cannot read prompts: {e}") from None
    groups: dict[str, list[str]] = {}
    outs: dict[str, set[int]] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if n > MAX_JSONL_LINES:
            raise ProbeError(f"{p}: more than {MAX_JSONL_LINES} prompts")
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as e:
            raise ProbeError(f"{p}:{n}: not JSON: {e.msg}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("prompt"), str) or not doc["prompt"]:
            raise ProbeError(f'{p}:{n}: expected an object with a non-empty "prompt" string')
        mix = doc.get("mix", "jsonl")
        if not isinstance(mix, str) or not mix:
            raise ProbeError(f'{p}:{n}: "mix" must be a non-empty string')
        mt = doc.get("max_tokens")
        if mt is not None and (not isinstance(mt, int) or isinstance(mt, bool) or mt < 1):
            raise ProbeError(f'{p}:{n}: "max_tokens" must be a positive integer')
        groups.setdefault(mix, []).append(doc["prompt"])
        if mt is not None:
            outs.setdefault(mix, set()).add(mt)
    if not groups:
        raise ProbeError(f"{p}: no prompts")
    mixes = []
    for name, prompts in groups.items():
        if output_tokens is not None:
            out = output_tokens
        elif len(outs.get(name, set())) == 1:
            out = next(iter(outs[name]))
        else:
            raise ProbeError(f"{p}: mix {name!r} needs --output-tokens or one max_tokens on all its lines")
        mixes.append(Mix(MixSpec(name=name, output_tokens=out, prompts_from=f"jsonl:{p.name}"), tuple(prompts)))
    return mixes
