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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import requests

from gate.inputs.loading import PROMPTS_LIMITS, read_jsonl
from gate.probe.record import MixSpec, ProbeError
from gate.status import InputError

WORDS = ("the quick brown fox jumps over the lazy dog speculative decoding draft target token accept "
         "reject cache block prefix prompt generation metrics one two three four five six seven eight "
         "nine ten").split()
MAX_JSONL_LINES = 10_000
MAX_TEMPERATURE = 10.0


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
    the lines' `max_tokens` (which must then agree within the mix). The file is read by
    `gate.inputs.loading.read_jsonl` (a regular file under `PROMPTS_LIMITS`, each line under the JSON
    limits); every defect is an InputError naming the file and the line.
    """
    p = Path(path)
    groups: dict[str, list[str]] = {}
    outs: dict[str, set[int]] = {}
    for n, doc in read_jsonl(p, "prompts", PROMPTS_LIMITS, MAX_JSONL_LINES):
        if not isinstance(doc, dict) or not isinstance(doc.get("prompt"), str) or not doc["prompt"]:
            raise InputError(f'prompts {p}:{n}: expected an object with a non-empty "prompt" string')
        mix = doc.get("mix", "jsonl")
        if not isinstance(mix, str) or not mix:
            raise InputError(f'prompts {p}:{n}: "mix" must be a non-empty string')
        mt = doc.get("max_tokens")
        if mt is not None and (not isinstance(mt, int) or isinstance(mt, bool) or mt < 1):
            raise InputError(f'prompts {p}:{n}: "max_tokens" must be a positive integer')
        groups.setdefault(mix, []).append(doc["prompt"])
        if mt is not None:
            outs.setdefault(mix, set()).add(mt)
    if not groups:
        raise InputError(f"prompts {p}: no prompts")
    mixes = []
    for name, prompts in groups.items():
        if output_tokens is not None:
            out = output_tokens
        elif len(outs.get(name, set())) == 1:
            out = next(iter(outs[name]))
        else:
            raise InputError(f"prompts {p}: mix {name!r} needs --output-tokens or one max_tokens on all its lines")
        mixes.append(Mix(MixSpec(name=name, output_tokens=out, prompts_from=f"jsonl:{p.name}"), tuple(prompts)))
    return mixes


@dataclass(frozen=True)
class MixRequest:
    """The request mix `specgate probe` was asked for: exactly one of `prompt_tokens`, `plan`, `prompts`."""

    prompt_tokens: int | None = None
    output_tokens: int | None = None
    plan: Path | None = None
    prompts: Path | None = None
    names: tuple[str, ...] = ()  # with `plan`: only these mixes
    concurrencies: tuple[int, ...] = ()  # the user's --concurrency (empty: each plan mix at its own)
    temperature: float = 0.0


@dataclass(frozen=True)
class PromptShape:
    """A mix whose prompts are still to be built: `prompt_tokens` ids of the engine's own tokenizer each."""

    name: str
    prompt_tokens: int
    output_tokens: int
    concurrency: int | None  # the plan's own concurrency, None for --prompt-tokens
    temperature: float


def wanted_mixes(req: MixRequest) -> list[Mix | PromptShape]:
    """The mixes asked for, from the flags and the files they name, before any request is sent.

    Why before: a bad plan, prompts file or flag is invalid input (one line, exit 3) and must be told before
    the engine is contacted. JSONL prompts come back as finished `Mix`es; plan mixes and `--prompt-tokens`
    as `PromptShape`s that `mixes_for` turns into prompts with the engine's tokenizer.
    """
    if len([x for x in (req.prompt_tokens, req.plan, req.prompts) if x is not None]) != 1:
        raise InputError("give exactly one of --prompt-tokens, --plan, --prompts")
    if not 0 <= req.temperature <= MAX_TEMPERATURE:
        raise InputError(f"--temperature must be between 0 and {MAX_TEMPERATURE:g}")
    if req.prompts is not None:
        return [Mix(m.spec.model_copy(update={"temperature": req.temperature}), m.prompts)
                for m in jsonl_mixes(req.prompts, req.output_tokens)]
    if req.plan is not None:
        return _plan_shapes(req, req.plan)
    assert req.prompt_tokens is not None
    if req.output_tokens is None:
        raise InputError("--prompt-tokens needs --output-tokens")
    if not req.concurrencies:
        raise InputError("--prompt-tokens needs --concurrency")
    suffix = f"-t{req.temperature:g}" if req.temperature else ""
    return [PromptShape(f"p{req.prompt_tokens}-o{req.output_tokens}{suffix}", req.prompt_tokens, req.output_tokens,
                        None, req.temperature)]


def _plan_shapes(req: MixRequest, path: Path) -> list[Mix | PromptShape]:
    from gate.plan.model import load_plan

    plan = load_plan(path)
    missing = sorted(set(req.names) - {m.name for m in plan.workload})
    if missing:
        raise InputError(f"plan has no mix {', '.join(missing)}")
    chosen = [m for m in plan.workload if not req.names or m.name in req.names]
    if not chosen:
        raise InputError(f"{path}: the plan has no workload mixes")
    shapes: list[Mix | PromptShape] = []
    for m in chosen:
        if m.prompt_tokens < 1 or m.output_tokens < 1:
            raise InputError(f"mix {m.name}: prompt and output tokens must be at least 1")
        shapes.append(PromptShape(m.name, m.prompt_tokens, req.output_tokens or m.output_tokens, m.concurrency,
                                  req.temperature))
    return shapes


def mixes_for(wanted: Sequence[Mix | PromptShape], base_url: str, model: str, timeout: float,
              api_key: str | None, prompts_needed: Callable[[int | None], int]) -> list[Mix]:
    """Every wanted mix with its prompts: a shape gets `prompts_needed(its concurrency)` prompts of exactly its
    length from the engine's `/tokenize` (else words, and the record says so); a finished mix is kept."""
    mixes = []
    for w in wanted:
        if isinstance(w, Mix):
            mixes.append(w)
            continue
        prompts, how = token_prompts(base_url, model, w.prompt_tokens, prompts_needed(w.concurrency), timeout, api_key)
        mixes.append(Mix(MixSpec(name=w.name, prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens,
                                 prompts_from=how, concurrency=w.concurrency, temperature=w.temperature), prompts))
    return mixes
