"""A starting plan from a target's (and a drafter's) config.json: what `specgate init` writes.

Why: a newcomer's first plan took four rejected keys. The writer fills what the configs tell
(names, config paths, the drafter family, a depth that fits the family, the KV bytes per token as
a comment) and writes every key the user must decide as `null` with a `# TODO` comment saying
what it is and where it comes from (budgets, request mixes, the acceptance target and its
source, the memory fraction). The result loads (`gate.plan.model.load_plan`), and `specgate check`
on it says what is still missing: no acceptance target is a fail before rollout (seed 002),
unknown budgets are inconclusive — never a pass on placeholders. The TODO keys written empty are listed
under `placeholders:` (`placeholder_keys`), and a line that reads one still empty cannot pass (issue 36).

The family comes from the gate's own detection (`gate.model.config.drafter_family`); a
`--method` that the drafter's config contradicts is invalid input (`family_mismatch`).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gate.inputs.configs import load_config
from gate.model.config import ConfigError, drafter_family, mtp_layers, num_hidden_layers
from gate.model.depth import BLOCK_METHODS, DRAFTERLESS_METHODS, EMBEDDED_METHODS, METHODS
from gate.model.engines import PROFILES, profile
from gate.model.engines.base import DepthScheduler, OwnKeysPoolPredictor, drafter_block_size
from gate.model.geometry import kv_geometry
from gate.model.identity import family_mismatch
from gate.status import InputError

# The method a detected family is launched with, when --method is not given.
FAMILY_METHOD: dict[str, str] = {"eagle3": "eagle3", "dflash": "dflash", "dspark": "dspark", "mtp": "mtp",
                                 "draft_model": "draft_model"}
REPO_SCHEMA = Path(__file__).resolve().parents[2] / "examples" / "plans" / "plan.schema.json"


class InitError(InputError):
    """Bad input to `specgate init` (one line)."""


@dataclass(frozen=True)
class InitRequest:
    target: Path
    engine: str
    method: str | None = None
    drafter: Path | None = None
    out: Path | None = None
    name: str | None = None
    tp: int = 1
    depth: int | None = None


@dataclass(frozen=True)
class Depth:
    """The speculative keys for the engine, and why this depth."""

    keys: dict[str, int]
    why: str


def _load(path: Path, role: str) -> dict[str, Any]:
    try:
        return load_config(path)
    except ConfigError as e:
        raise InitError(f"{role}: {e}") from None


def choose_depth(engine: str, method: str, target: dict[str, Any], drafter: dict[str, Any] | None,
                 depth: int | None) -> Depth:
    """k for the family (the co-design rules of gate.checks.codesign), in the engine's own keys
    (the engine profile's `block_depth_keys` / `chain_depth_keys`)."""
    prof = profile(engine)
    bs = drafter_block_size(drafter) if drafter is not None else None  # dflash_config's block first, as SGLang
    why = "your choice (--num-speculative-tokens)" if depth is not None else ""
    if method in BLOCK_METHODS and bs is not None:
        keys = prof.block_depth_keys(method, bs, depth)
        return Depth(dict(keys.keys), keys.why)
    if depth is None and method in EMBEDDED_METHODS:
        n = mtp_layers(target)
        depth, why = (n, f"the target's {n} MTP layer(s)") if n > 0 else (1, "one MTP step (assumed)")
    if depth is None and drafter is not None:
        raw = drafter.get("speculators_config")
        spec: dict[str, Any] = raw if isinstance(raw, dict) else {}
        methods = spec.get("proposal_methods")
        proposal: list[Any] = methods if isinstance(methods, list) else []
        st = next((p.get("speculative_tokens") for p in proposal if isinstance(p, dict)), None)
        if isinstance(st, int) and st > 0:
            depth, why = st, f"the drafter's speculators_config speculative_tokens {st}"
    if depth is None:
        depth, why = 3, "k = 3, a common start: choose it with `specgate tune` on your traffic"
    keys = prof.chain_depth_keys(depth, why)
    return Depth(dict(keys.keys), keys.why)


def check_depth(method: str, depth: Depth) -> None:
    """InitError unless the plan's own loader takes these speculative keys (gate.plan.model.Speculative: k at most
    MAX_SPECULATIVE_DEPTH, SGLang's draft tokens at most 16 × that): init never writes a plan it would refuse
    (`--num-speculative-tokens 100`, a drafter's block_size 100000)."""
    from pydantic import ValidationError

    from gate.plan.model import Speculative
    from gate.plan.suggest import one_line

    try:
        Speculative.model_validate({"method": method, **depth.keys})
    except ValidationError as e:
        raise InitError(f"the plan would not load: engine.speculative {one_line(Speculative, e.errors())} "
                        f"({depth.why})") from None


def _rel(path: Path, base: Path) -> str:
    try:
        return os.path.relpath(path.resolve(), base.resolve())
    except ValueError:  # another drive (Windows)
        return str(path.resolve())


def _kv_note(cfg: dict[str, Any], tp: int, role: str) -> str:
    try:
        g = kv_geometry(cfg, tp=tp)
        return (f"{role}: {g.num_layers} layers, KV {g.bytes_per_token:,} B/token per rank at {g.dtype} "
                f"(TP {tp}; `specgate kv`)")
    except (ConfigError, InputError, ValueError, KeyError, TypeError) as e:
        return f"{role}: KV bytes per token not computable from the config ({e})"


def _model_name(path: Path, cfg: dict[str, Any]) -> str:
    """The config's own `_name_or_path`, else its directory (for config.json) or file name."""
    named = cfg.get("_name_or_path")
    if isinstance(named, str) and named and not named.startswith(("/", ".")):
        return named
    p = path.resolve()
    if p.is_dir():
        return p.name
    return p.parent.name if p.name == "config.json" else p.stem


def _vocabulary_lines(omitted: tuple[tuple[str, str], ...]) -> list[str]:
    """The `vocabulary:` keys the engine's draft vocabulary rule needs and the config omits, each a TODO."""
    if not omitted:
        return []
    return ["  vocabulary:  # what the engine compares of draft and target vocabularies and this config omits",
            *(f"    {key}: null  # TODO: {why}" for key, why in omitted)]


def _q(value: Any) -> str:
    return json.dumps(value)


def detect_method(req: InitRequest, target: dict[str, Any], drafter: dict[str, Any] | None) -> tuple[str, str | None]:
    """(method, detected family); the family is None for a drafterless method."""
    method = req.method
    if method is not None and method not in METHODS:
        raise InitError(f"--method must be one of {', '.join(METHODS)}")
    if method in DRAFTERLESS_METHODS:
        if drafter is not None:
            raise InitError(f"--method {method} has no drafter: drop --drafter")
        return str(method), None
    try:
        family = drafter_family(drafter, target)
    except ConfigError as e:
        raise InitError(f"no drafter family: {e}; give --drafter CONFIG, or --method ngram|suffix") from None
    if method is None:
        method = FAMILY_METHOD[family]
    why = family_mismatch(family, method)
    if why is not None:
        raise InitError(why)
    if drafter is None and method not in EMBEDDED_METHODS:
        raise InitError(f"--method {method} needs --drafter CONFIG")
    return method, family


def render(req: InitRequest) -> str:
    """The commented plan text (YAML) for one request."""
    if req.engine not in PROFILES:
        raise InitError(f"--engine must be {' or '.join(PROFILES)}")
    engine = profile(req.engine)
    target = _load(req.target, "target config")
    drafter = _load(req.drafter, "drafter config") if req.drafter is not None else None
    try:
        num_hidden_layers(target, "target config")
    except ConfigError as e:
        raise InitError(str(e)) from None
    method, family = detect_method(req, target, drafter)
    depth = choose_depth(req.engine, method, target, drafter, req.depth)
    check_depth(method, depth)
    base = (req.out.parent if req.out is not None else Path.cwd())
    tname = req.name or _model_name(req.target, target)
    schema = (_rel(REPO_SCHEMA, base) if REPO_SCHEMA.exists() else "plan.schema.json")
    embedded = method in EMBEDDED_METHODS and drafter is None
    staged = family is not None and not embedded  # a second artifact to stage: the staging line judges it
    L: list[str] = [
        f"# yaml-language-server: $schema={schema}",
        *([] if REPO_SCHEMA.exists() else ["# (write the schema beside this plan: specgate schema plan --out plan.schema.json)"]),
        f"# Written by `specgate init` for {method} on {req.engine}. Every key: docs/reference/plan.md",
        "# (or `specgate schema plan`). Lines marked TODO are yours to fill in; until then `specgate check`",
        "# says what is missing (no acceptance target is a fail before rollout, unknown budgets inconclusive).",
        "# Paths are relative to this file.",
        f"name: {_q(f'{tname}-{method}')}",
        "description: null  # TODO: what this rollout is",
        "",
        "target:",
        f"  name: {_q(tname)}  # TODO: the Hugging Face id (evidence must carry the served name)",
        "  revision: null  # TODO: pin the commit you deploy",
        f"  config: {_q(_rel(req.target, base))}",
        f"  # {_kv_note(target, req.tp, 'predicted')}",
        *_vocabulary_lines(engine.draft_vocabulary_omitted(method, target) if drafter is not None else ()),
        "  weights:",
        "    path: null  # TODO: the checkpoint directory (safetensors), or bytes: N",
    ]
    if drafter is not None and req.drafter is not None:
        dname = _model_name(req.drafter, drafter)
        L += [
            "",
            f"drafter:  # detected family: {family} (gate.model.config.drafter_family)",
            f"  name: {_q(dname)}  # TODO: the Hugging Face id",
            "  revision: null  # TODO: pin it",
            f"  config: {_q(_rel(req.drafter, base))}",
            f"  # {_kv_note(drafter, req.tp, 'predicted')}",
            *_vocabulary_lines(engine.draft_vocabulary_omitted(method, drafter)),
            "  weights:",
            "    path: null  # TODO: the drafter checkpoint, or bytes: N",
            "  kv_scope: full  # full | window (window_tokens, sink_tokens) | block (block_tokens): what it attends to",
        ]
    elif embedded:
        L += ["", f"# drafter: none needed — the {method} head ships inside the target checkpoint "
                  f"({mtp_layers(target)} MTP layer(s) in its config)"]
    else:
        L += ["", f"# drafter: none — {method} proposes from the tokens themselves"]
    spec = "\n".join(f"    {k}: {v}" for k, v in depth.keys.items())
    L += [
        "",
        "engine:",
        f"  kind: {req.engine}",
        "  version: null  # TODO: the engine version you deploy",
        f"  tp: {req.tp}",
        "  kv_dtype: auto  # the config's dtype; fp8 halves KV bytes but needs a working kernel path for long",
        "  # prompts: test the requests that matter on the exact image before counting on it (seed 000)",
        *(engine.init_memory_lines if isinstance(engine, OwnKeysPoolPredictor) else (
            f"  block_size: null  # {engine.init_block_size_comment}",
            "  kv_cache_memory_bytes: null  # TODO: KV memory per GPU the pool is carved from (gives the predicted pool)",
            f"  memory_fraction: null  # {engine.init_memory_fraction_comment}",
            "  context_cap_tokens: null  # TODO: --max-model-len / --context-length")),
        "  speculative:",
        f"    method: {method}",
        f"    # depth: {depth.why}",
        spec,
        *([f"    # {engine.schedule_keys[0]}: …  # optional: {req.engine} runs a depth schedule from "
           f"{' / '.join(engine.schedule_keys)} (docs/reference/plan.md, engine.speculative)"]
          if isinstance(engine, DepthScheduler) and method not in DRAFTERLESS_METHODS else []),
        "",
        "budgets:  # TODO: the limits this rollout must fit (per GPU for memory)",
        "  storage_bytes: null  # target + drafter weights + image",
        "  gpu_memory_bytes: null  # memory of one GPU (per TP rank)",
        *(["  startup_seconds: null  # cold start to first ready request"] if staged else [
            "  # startup_seconds: S  # no second artifact to stage: the staging line is n/a without this budget;",
            "  # one set needs a measured cold start (evidence.reported.startup_seconds: {value, source})"]),
        "",
        "workload: []  # TODO: the request mixes that matter, from your traffic, e.g.",
        "#  - {name: chat, concurrency: 8, prompt_tokens: 2048, output_tokens: 512, source: \"p90 of last week\"}",
        "",
        "slo:",
        "  target_acceptance_length: null  # TODO: L per batch window (incl. bonus token), above break-even L*",
        "  target_source: null  # TODO: first word traffic | benchmark | assumed, then a note (seed 002: set it from your traffic)",
        "",
        "costs: []  # TODO (for break-even L*): step costs per point, declared or measured, e.g.",
        "#  - {point: 2K, target_step_ms: 14.1, verify_cycle_ms: 31.2, source: \"specgate probe\"}",
        "",
        *(["evidence:  # exporter_url / prometheus / captures / reported / probes: see docs/reference/plan.md",
           "  reported:  # facts from runs you made, each as {value: N, source: \"where you read it\"}",
           "    startup_seconds: null  # TODO: cold start with the drafter, e.g. {value: 140, source: \"launch log\"};",
           "    # not run yet? leave it null and give the next key and staging.load_seconds: a predicted cold start",
           "    startup_seconds_without_drafter: null  # TODO: the target alone's cold start (today's deployment)"]
          if staged else
          ["evidence: {}  # exporter_url / prometheus / captures / reported / probes: see docs/reference/plan.md"]),
    ]
    if staged:
        L[L.index("budgets:  # TODO: the limits this rollout must fit (per GPU for memory)"):0] = [
            "staging:",
            "  mode: overlapped  # TODO: serial warns (seed 002: stage checkpoints overlapped)",
            "  order: [target, drafter]",
            "  warmup_check: null  # TODO: how readiness is checked (required with a second artifact)",
            "  # load_seconds: {drafter: S}  # the drafter checkpoint's load, its bytes / your storage-to-GPU bytes/s:",
            "  # with evidence.reported.startup_seconds_without_drafter it predicts the cold start before any run",
            "",
        ]
    text = "\n".join(L) + "\n"
    keys = placeholder_keys(text)
    if keys:
        text += "\n".join([
            "",
            "# The TODO keys above, as init left them: while one is still null or [], the budget line that reads it",
            "# cannot pass (`specgate check` names it). Delete a key from this list to say that null is what you mean.",
            "placeholders:",
            *(f"  - {k}" for k in keys),
        ]) + "\n"
    return text


_KEY_LINE = re.compile(r"( *)([A-Za-z_]\w*):(.*)$")


def placeholder_keys(text: str) -> list[str]:
    """The dotted keys this writer left as placeholders: written `null`, `[]` or `{}` with a `# TODO` on the line or
    on their section's line (`budgets:  # TODO`). Read off the rendered text so that the list and the TODO lines
    cannot drift apart (gate.plan.model.Plan.placeholders says what the list does)."""
    path: list[tuple[int, str, bool]] = []  # (indent, key, the section's line has a TODO)
    keys: list[str] = []
    for line in text.splitlines():
        m = _KEY_LINE.fullmatch(line)
        if m is None:  # comments, blank lines, list items
            continue
        indent, key = len(m.group(1)), m.group(2)
        value, _, comment = m.group(3).partition("#")
        while path and path[-1][0] >= indent:
            path.pop()
        todo = "TODO" in comment
        if not value.strip():
            path.append((indent, key, todo))
        elif value.strip() in ("null", "[]", "{}") and (todo or (path and path[-1][2])):
            keys.append(".".join([*(k for _, k, _ in path), key]))
    return keys
