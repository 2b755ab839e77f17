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

Each request index gets its own prompt (the text is rotated by the index, 32 rotations), so
requests of one cell do not share a prefix; repetitions reuse the same prompts in both arms.

`/tokenize` is an engine answer like any other, so it is bounded (issue 21: a lying one drove the
probe to 2 GB): one read per distinct text (at most 32 rotations a mix, however many requests),
each under the campaign's deadline and `gate.inputs.fetch.tokenize_bytes` of its text, and a text
grown to find enough ids stops at `MAX_WORDS_PER_TOKEN` words per wanted token.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from exporter.engines import ADAPTERS
from gate.evidence.probes import MixSpec, ProbeError
from gate.inputs.fetch import FetchError, fetch, tokenize_bytes
from gate.inputs.loading import PROMPTS_LIMITS, Limits, read_jsonl
from gate.inputs.redact import redact_url
from gate.status import InputError

WORDS = ("the quick brown fox jumps over the lazy dog speculative decoding draft target token accept "
         "reject cache block prefix prompt generation metrics one two three four five six seven eight "
         "nine ten").split()
MAX_JSONL_LINES = 10_000
MAX_TEMPERATURE = 10.0
MAX_WORDS_PER_TOKEN = 8  # a text of 8 words per wanted id that still tokenizes short is not a tokenizer's answer


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


# The spellings of a `/tokenize` body, each engine's `tokenize_field` once, in the registry's order: vLLM's and
# SGLang's `{"model", "prompt"}`, then llama.cpp's `{"content"}` (its adapter says why).
TOKENIZE_BODIES: tuple[str, ...] = tuple(dict.fromkeys(cls.tokenize_field for cls in ADAPTERS.values()))


def tokenize(base_url: str, model: str, text: str, deadline: float,
             api_key: str | None = None) -> list[int] | None:
    """`POST /tokenize` → token ids; None when the engine has no such endpoint. The OpenAI-style body first;
    an empty answer to a non-empty text is asked again in llama.cpp's spelling (`TOKENIZE_BODIES`), so no
    engine name is compared here. Each try is one bounded exchange: by `deadline`, at most
    `tokenize_bytes(words of text)` of answer (ProbeError otherwise)."""
    for field in TOKENIZE_BODIES:
        body = {"model": model, "prompt": text} if field == "prompt" else {"content": text}
        tokens = _tokenize_once(base_url, body, text, deadline, api_key)
        if tokens is None or tokens or not text.strip():
            return tokens
    return []


def _tokenize_once(base_url: str, body: dict[str, str], text: str, deadline: float,
                   api_key: str | None) -> list[int] | None:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    shown = redact_url(f"{base_url}/tokenize")
    words = text.count(" ") + 1
    try:
        r = fetch(f"{base_url}/tokenize", deadline=deadline, max_bytes=tokenize_bytes(words), method="POST",
                  headers=headers, body=json.dumps(body).encode())
        if r.status in (404, 405):
            return None
        if r.status != 200:
            raise ProbeError(f"{shown} answered HTTP {r.status}: {' '.join(r.text().split())[:200]}")
        doc = r.json(shown, Limits(max_bytes=tokenize_bytes(words), max_depth=8))
    except FetchError as e:
        raise ProbeError(str(e)) from None
    tokens = doc.get("tokens") if isinstance(doc, dict) else None
    if not isinstance(tokens, list):
        raise ProbeError(f"{shown}: no 'tokens' list in the answer")
    if not all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in tokens):
        raise ProbeError(f"{shown}: 'tokens' is not a list of ids")
    return tokens


def token_prompts(base_url: str, model: str, prompt_tokens: int, count: int, timeout: float,
                  api_key: str | None = None, stop_at: float | None = None) -> tuple[
        tuple[str | tuple[int, ...], ...], str]:
    """`count` prompts of exactly `prompt_tokens` ids (or words where the engine cannot tokenize). Each
    distinct text is tokenized once; each call ends by `timeout` from its start or `stop_at`."""
    cache: dict[str, list[int] | None] = {}

    def ids_of(text: str) -> list[int] | None:
        if text not in cache:
            deadline = time.monotonic() + timeout if stop_at is None else min(time.monotonic() + timeout, stop_at)
            cache[text] = tokenize(base_url, model, text, deadline, api_key)
        return cache[text]

    prompts: list[str | tuple[int, ...]] = []
    most = MAX_WORDS_PER_TOKEN * prompt_tokens + 8
    for i in range(count):
        words = prompt_tokens + 8
        ids = ids_of(base_text(i, words))
        if ids is None:
            return tuple(base_text(j, prompt_tokens) for j in range(count)), "approximate_words"
        while len(ids) < prompt_tokens:  # BPE merges: fewer ids than words; grow and retry
            words *= 2
            if words > most:
                raise ProbeError(f"{redact_url(base_url)}/tokenize returns {len(ids)} ids for {words // 2} words; "
                                 f"cannot build a {prompt_tokens}-token prompt")
            longer = ids_of(base_text(i, words)) or []
            if len(longer) <= len(ids):
                raise ProbeError(f"{redact_url(base_url)}/tokenize returns {len(ids)} ids however long the text; "
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
    """The request mix `specgate probe` was asked for: exactly one of `prompt_tokens`, `plan`, `prompts`.

    `prompt_tokens` may be several lengths (issue 39, `--prompt-tokens 2048,32768,131072`): one mix per length,
    named by it, so each length is its own cells and the engine's counters are attributed to it alone."""

    prompt_tokens: int | tuple[int, ...] | None = None
    output_tokens: int | None = None
    plan: Path | None = None
    prompts: Path | None = None
    names: tuple[str, ...] = ()  # with `plan`: only these mixes
    concurrencies: tuple[int, ...] = ()  # the user's --concurrency (empty: each plan mix at its own)
    temperature: float = 0.0
    request_rates: tuple[float, ...] = ()  # the user's --request-rate (open loop)


@dataclass(frozen=True)
class PromptShape:
    """A mix whose prompts are still to be built: `prompt_tokens` ids of the engine's own tokenizer each."""

    name: str
    prompt_tokens: int
    output_tokens: int
    concurrency: int | None  # the plan's own concurrency, None for --prompt-tokens
    temperature: float
    request_rate: float | None = None  # the plan's own arrival rate (workload[].request_rate), if declared


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
    if not req.concurrencies and not req.request_rates:
        raise InputError("--prompt-tokens needs --concurrency or --request-rate")
    suffix = f"-t{req.temperature:g}" if req.temperature else ""
    lengths = (req.prompt_tokens,) if isinstance(req.prompt_tokens, int) else tuple(dict.fromkeys(req.prompt_tokens))
    if not lengths or any(n < 1 for n in lengths):
        raise InputError("--prompt-tokens needs positive lengths")
    return [PromptShape(f"p{n}-o{req.output_tokens}{suffix}", n, req.output_tokens, None, req.temperature)
            for n in lengths]


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
                                  req.temperature, m.request_rate))
    return shapes


def mixes_for(wanted: Sequence[Mix | PromptShape], base_url: str, model: str, timeout: float,
              api_key: str | None, prompts_needed: Callable[[int | None], int],
              stop_at: float | None = None) -> list[Mix]:
    """Every wanted mix with its prompts: a shape gets `prompts_needed(its concurrency)` prompts of exactly its
    length from the engine's `/tokenize` (else words, and the record says so); a finished mix is kept.
    `stop_at`: the campaign's end (monotonic), which no tokenize call runs past."""
    mixes = []
    for w in wanted:
        if isinstance(w, Mix):
            mixes.append(w)
            continue
        prompts, how = token_prompts(base_url, model, w.prompt_tokens, prompts_needed(w.concurrency), timeout, api_key,
                                     stop_at)
        mixes.append(Mix(MixSpec(name=w.name, prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens,
                                 prompts_from=how, concurrency=w.concurrency, temperature=w.temperature,
                                 request_rate=w.request_rate), prompts))
    return mixes
