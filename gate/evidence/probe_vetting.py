"""Floor 2: are two probe records one experiment, each consistent with itself, and about the plan's deployment?

Why: a probe record is a file anyone can write, and `compare`'s statistics believe whatever it holds —
two records of another model, another engine or another depth; a plan mix of 8,192/2,048 tokens judged
by a probe mix of 32/32 that shares its name; the same three cells copied twice (a 3-vs-3 comparison
then reaches p = 0.001); a "speculative" arm that never speculated; rates that are not tokens / wall;
arms measured years apart. Records are therefore vetted the way captures and windows are
(`gate.evidence.vetting`, `gate.model.identity`, `gate.model.plausibility`) before any verdict:

- each record on its own (`record_defects`): the arm's speculative settings present exactly on the
  speculative arm, and acceptance measured exactly there (a speculative record with no L in any cell
  measured no speculation, unless its own recorded schedule runs k = 0 at every cell's concurrency
  (`plain_only`); a baseline carrying L, drafts or per-request L is not a baseline); every
  cell's mix described in `workload`; `(mix, concurrency, repetition)` unique, and no two cells of one content
  whatever their repetition numbers (`gate.model.invariants.repeated`); per cell
  `served_tokens_per_second` = `output_tokens / wall_seconds` within `RATE_CONSISTENCY`, at most
  `MAX_SERVED_TOKENS_PER_SECOND`, failed ≤ requests, prompt and output tokens per completed request as the
  mix declares (`plausibility.cell_mix`: a 128/64 mix is not measured by 20,000/3-token requests),
  at most one per-request L per completed request, and the acceptance bounds at the record's depth k
  (`1 ≤ L ≤ 1 + k`, per-request L likewise, `a ≥ (L − 1)/k`, `L = 1 + accepted/drafts` where all are known;
  k unknown: `MAX_SPECULATIVE_DEPTH`);
- the two arms against each other (`pair_defects`): engine, engine version and served model known on
  both and equal; every mix both describe of one known shape (prompt and output tokens, prompt source,
  temperature; a prompt length unknown on both sides is not the same shape); `created_at` known, a date with a time zone, not in the future (the clock-skew
  allowance) and the two within `PROBE_ARMS_MAX_APART_SECONDS`;
- the arms against the plan (`plan_defects`): the plan's engine kind, its version where it names one,
  its served model (`engine.served_model_name`, default `target.name`; `gate.model.identity`), its
  method and its depth k (`Plan.depth`), and in `post` records no older than `PROBE_MAX_AGE_SECONDS`.

Unknown is not "the same": a field a rule needs that a record leaves null is a defect naming the field.
Each function returns the defects as one-line sentences (empty: none); `compare` refuses a pair with
any (CompareError, exit 3) and the acceptance line turns inconclusive with the first.

Records in the `specgate.probe/1` shape `specgate probe` writes pass all of this: it fills every field
named here (the speculative arm's `--speculative-config` gives its method and depth).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from exporter.formulas import acceptance_length
from gate.evidence.probes import CLIENT_BOUND_FACTOR, Cell, MixSpec, ProbeRecord
from gate.model import plausibility as pl
from gate.model.depth import MAX_SPECULATIVE_DEPTH, depth_schedule, speculative_depth
from gate.model.engines import PROFILES, profile
from gate.model.identity import EvidenceIdentity, match, parse_version
from gate.model.invariants import (
    APPLICABILITY,
    IDENTITY,
    MEMBER_TIME,
    PLAUSIBILITY,
    UNIQUENESS,
    reason,
    repeated,
)
from gate.model.speedup.energy import energy_defects, energy_pair_defects
from gate.plan.model import Plan

# The depth keys a speculative config may carry, in each engine's spelling (vLLM `--speculative-config`,
# SGLang `--speculative-<key>`, recorded with or without the `speculative_` prefix).
DEPTH_KEYS = ("num_speculative_tokens", "num_draft_tokens", "num_steps", "eagle_topk")
# SGLang's tree may hold up to 16 tokens per step (the plan's own bound on num_draft_tokens).
_KEY_MAX = {"num_draft_tokens": 16 * MAX_SPECULATIVE_DEPTH}


def _setting(spec: Mapping[str, Any], key: str) -> Any:
    return spec[key] if key in spec else spec.get(f"speculative_{key}")


def record_method(rec: ProbeRecord) -> str | None:
    """The speculative method or algorithm the record names (vLLM `method`, SGLang `algorithm`); None: not named."""
    if rec.speculative is None:
        return None
    for key in ("method", "algorithm"):
        v = _setting(rec.speculative, key)
        if isinstance(v, str) and v:
            return v
    return None


def record_depth(rec: ProbeRecord) -> tuple[int | None, str | None]:
    """k from the record's speculative settings through the engine's own rule (`gate.model.depth`), and the
    defect when a depth key is not a whole number in range; (None, None) when no depth is named."""
    if rec.speculative is None:
        return None, None
    keys: dict[str, int | None] = {}
    for key in DEPTH_KEYS:
        v = _setting(rec.speculative, key)
        if v is None:
            keys[key] = None
            continue
        high = _KEY_MAX.get(key, MAX_SPECULATIVE_DEPTH)
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= high:
            return None, f"the {rec.arm} record's speculative.{key} {v!r} is not a whole number in 1..{high}"
        keys[key] = v
    if rec.engine is None or all(v is None for v in keys.values()):
        return None, None
    return speculative_depth(rec.engine, **keys), None


def created_at(rec: ProbeRecord) -> tuple[float | None, str | None]:
    """`created_at` as seconds since the epoch, or the defect: unknown, not an ISO 8601 date, no time zone."""
    where = f"the {rec.arm} record's created_at"
    if rec.created_at is None:
        return None, f"{where} is unknown (null): when it was measured cannot be shown"
    try:
        return pl.instant(rec.created_at), None
    except ValueError as e:
        return None, f"{where} {rec.created_at!r} {e}"


def client_bound(rec: ProbeRecord, c: Cell) -> str | None:
    """Why a cell's rate may be the client's, not the engine's, or None: marked `client_bound` by the probe, or its
    served tokens/s at least 1/`CLIENT_BOUND_FACTOR` of the record's `client_ceiling` at its point
    (`ClientCeiling.at`; recomputed here, so a record cannot unmark itself). Unknown ceiling: None (not assessed)."""
    where = (f"the {rec.arm} record's cell {c.mix!r} at "
             + (f"request rate {c.request_rate:g}/s" if c.request_rate is not None else f"concurrency {c.concurrency}")
             + f", repetition {c.repetition}")
    ceiling = rec.client_ceiling.at(c.concurrency, c.request_rate) if rec.client_ceiling is not None else None
    if ceiling is not None and c.served_tokens_per_second * CLIENT_BOUND_FACTOR >= ceiling:
        return (f"{where} is client-bound: {c.served_tokens_per_second:.4g} tok/s is within {CLIENT_BOUND_FACTOR:g}x "
                f"of the probe client's own ceiling {ceiling:.4g} tok/s on this machine (client_ceiling): the client "
                "may have set the rate, not the engine; no evidence")
    if c.client_bound:
        return (f"{where} is marked client-bound by the probe ({c.served_tokens_per_second:.4g} tok/s): the client "
                "may have set the rate, not the engine; no evidence")
    return None


def plain_only(rec: ProbeRecord) -> bool:
    """The speculative record measured only where its own recorded depth schedule runs k = 0 (issue 37 item 6):
    every cell closed-loop, at a concurrency whose band runs k = 0. Such a record measured plain decoding, so no
    acceptance length is what it should hold. Not so for a record of no schedule (a fixed k), of an engine with
    no profile, of a schedule its engine refuses, of a cell in a band with k > 0, or of an open-loop cell (its
    batch, hence its k, is not declared)."""
    if (rec.arm != "speculative" or rec.speculative is None or rec.engine is None or rec.engine not in PROFILES
            or not rec.cells):
        return False
    try:
        sched = depth_schedule(rec.engine, rec.speculative).schedule
    except ValueError:
        return False
    return sched is not None and all(c.request_rate is None and sched.k_at(c.concurrency) == 0 for c in rec.cells)


def _has_acceptance(c: Cell) -> bool:
    return any(v is not None for v in (c.acceptance_length, c.acceptance_rate, c.drafts, c.draft_tokens,
                                       c.accepted_tokens, c.per_request_acceptance_length))


def _cell_defect(rec: ProbeRecord, c: Cell, mix: MixSpec, k: int | None) -> str | None:
    where = f"the {rec.arm} record's cell {c.mix!r} at concurrency {c.concurrency}, repetition {c.repetition}"
    rate = c.served_tokens_per_second
    expected = c.output_tokens / c.wall_seconds
    if abs(rate - expected) > pl.RATE_CONSISTENCY * max(expected, rate):
        return (f"{where}: served_tokens_per_second {rate:.6g} is not output_tokens / wall_seconds = "
                f"{c.output_tokens} / {c.wall_seconds:.6g} = {expected:.6g} (within {pl.RATE_CONSISTENCY:.0%})")
    bad = pl.number("served_tokens_per_second", rate, high=pl.MAX_SERVED_TOKENS_PER_SECOND, where=where)
    if bad is not None:
        return bad.reason
    if c.failed_requests > c.requests:
        return f"{where}: {c.failed_requests} failed of {c.requests} requests"
    bad = pl.cell_mix(requests=c.requests, failed=c.failed_requests, output_tokens=c.output_tokens,
                      prompt_tokens=c.prompt_tokens, mix_output=mix.output_tokens, mix_prompt=mix.prompt_tokens,
                      prompts_from=mix.prompts_from, where=where)
    if bad is not None:
        return bad.reason
    per = c.per_request_acceptance_length or []
    if len(per) > c.requests - c.failed_requests:
        return (f"{where}: {len(per)} per-request acceptance lengths for {c.requests - c.failed_requests} "
                "completed requests")
    if rec.arm == "baseline":
        if _has_acceptance(c):
            return (f"{where}: a baseline cell carries speculative acceptance (acceptance_length, drafts or "
                    "per-request L): the baseline arm ran with speculation, or the record is not a baseline")
        return None
    depth = k if k is not None else MAX_SPECULATIVE_DEPTH
    method = record_method(rec)
    bad = pl.acceptance(c.acceptance_length, c.acceptance_rate, depth, method=method, where=where)
    for x in per:
        bad = bad or pl.acceptance(x, None, depth, method=method, where=f"{where}, per-request L")
    if bad is not None:
        return bad.reason + ("" if k is not None else f" (k unknown: bounded by {MAX_SPECULATIVE_DEPTH})")
    if c.accepted_tokens is not None and c.draft_tokens is not None and c.accepted_tokens > c.draft_tokens:
        return f"{where}: {c.accepted_tokens:g} accepted of {c.draft_tokens:g} draft tokens"
    if c.drafts and c.accepted_tokens is not None and c.acceptance_length is not None:
        derived = acceptance_length(c.accepted_tokens, c.drafts)
        if derived is not None and abs(derived - c.acceptance_length) > pl.TOLERANCE * derived:
            return (f"{where}: acceptance_length {c.acceptance_length:.6g} is not 1 + accepted / drafts = "
                    f"{derived:.6g}")
    return None


def record_defects(rec: ProbeRecord) -> list[str]:
    """What makes one record inconsistent with itself (module docstring), in the order found."""
    out: list[str] = []
    if rec.arm == "baseline" and rec.speculative is not None:
        out.append(reason(APPLICABILITY, f"the baseline record carries speculative settings {rec.speculative}: it "
                          "is not a baseline"))
    if rec.arm == "speculative" and rec.speculative is None:
        out.append(reason(IDENTITY, "the speculative record names no speculative settings (speculative: null)"))
    k, bad_depth = record_depth(rec)
    if bad_depth:
        out.append(reason(PLAUSIBILITY, bad_depth))
    names = [m.name for m in rec.workload]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        out.append(reason(IDENTITY, f"the {rec.arm} record describes mix {', '.join(map(repr, dup))} more than once"))
    mixes = {m.name: m for m in rec.workload}
    cells = Counter((*c.point, c.repetition) for c in rec.cells)
    copied = sorted((key for key, n in cells.items() if n > 1), key=lambda k: (k[0], k[1], k[2] or 0.0, k[3]))
    if copied:
        m, conc, rate, rep = copied[0]
        at = f"request rate {rate:g}/s" if rate is not None else f"concurrency {conc}"
        out.append(reason(UNIQUENESS, f"the {rec.arm} record holds cell {m!r} at {at}, repetition {rep} "
                          f"{cells[copied[0]]} times ({len(copied)} repeated cell(s)): a copied cell is not another "
                          "measurement"))
    for c in rec.cells:
        arrivals = c.arrival_offsets_seconds
        if c.request_rate is None and (arrivals is not None or c.arrival_seed is not None):
            out.append(f"the {rec.arm} record's cell {c.mix!r} at concurrency {c.concurrency} carries arrival times "
                       "but no request_rate: open or closed loop cannot be told")
            break
        if arrivals is not None and (len(arrivals) != c.requests or any(b < a for a, b in zip(
                arrivals, arrivals[1:], strict=False))):
            out.append(f"the {rec.arm} record's cell {c.mix!r} at request rate {c.request_rate:g}/s has "
                       f"{len(arrivals)} arrival times for {c.requests} requests, or out of order")
            break
        if c.client_bound is False and rec.client_ceiling is not None and client_bound(rec, c) is not None:
            out.append(f"{client_bound(rec, c)}; the record marks it not client-bound")
            break
    undescribed = sorted({c.mix for c in rec.cells} - set(mixes))
    if undescribed:
        out.append(reason(IDENTITY, f"the {rec.arm} record's cells of mix {', '.join(map(repr, undescribed))} have "
                          "no workload entry: their prompt and output tokens are unknown"))
    for c in rec.cells:
        mix = mixes.get(c.mix)
        found = _cell_defect(rec, c, mix, k) if mix is not None else None
        if found:
            out.append(reason(PLAUSIBILITY, found))
            break
    if (rec.arm == "speculative" and not any(c.acceptance_length is not None for c in rec.cells)
            and not plain_only(rec)):
        out.append(reason(APPLICABILITY, "the speculative record measured no speculation: no cell has an "
                          "acceptance length"))
    if not copied:
        # Uniqueness by content (gate.model.invariants): a cell renumbered as another repetition is still a copy.
        renumbered = repeated([(f"the {rec.arm} record's cell {c.mix!r} at concurrency {c.concurrency}, repetition "
                                f"{c.repetition}", c.model_dump(exclude={"repetition"})) for c in rec.cells])
        if renumbered is not None:
            out.append(renumbered)
    return out + energy_defects(rec)


def _shape(m: MixSpec) -> tuple[int | None, int, str, float]:
    return m.prompt_tokens, m.output_tokens, m.prompts_from, m.temperature


def _shape_text(m: MixSpec) -> str:
    prompt = "unknown" if m.prompt_tokens is None else str(m.prompt_tokens)
    return f"{prompt}/{m.output_tokens} tokens, prompts {m.prompts_from}, temperature {m.temperature:g}"


def pair_defects(base: ProbeRecord, spec: ProbeRecord, now: float) -> list[str]:
    """What keeps two records from being one experiment (module docstring)."""
    out: list[str] = []
    for what, b, s in (("engine", base.engine, spec.engine), ("engine_version", base.engine_version,
                       spec.engine_version), ("model", base.model, spec.model)):
        if b is None or s is None:
            arms = " and ".join(a for a, v in (("baseline", b), ("speculative", s)) if v is None)
            out.append(reason(IDENTITY, f"the {arms} record's {what} is unknown (null): the arms cannot be shown "
                              "to be the same"))
        elif b != s:
            out.append(reason(IDENTITY, f"different {what}: baseline {b!r}, speculative {s!r}"))
    shapes_b = {m.name: m for m in base.workload}
    for m in spec.workload:
        b_mix = shapes_b.get(m.name)
        if b_mix is not None and _shape(b_mix) != _shape(m):
            out.append(reason(IDENTITY, f"mix {m.name!r} differs between the arms: {_shape_text(b_mix)} vs "
                              f"{_shape_text(m)}"))
        elif b_mix is not None and m.prompt_tokens is None and not m.prompts_from.startswith("jsonl:"):
            # Unknown on both sides is never "the same" (gate.model.invariants, identity); only one named prompts
            # file (the probe's --prompts jsonl:FILE) is the same prompts whatever their lengths.
            out.append(reason(IDENTITY, f"mix {m.name!r} has an unknown prompt length in both arms "
                              f"({_shape_text(m)}): the arms cannot be shown to serve the same mix"))
    times: list[float] = []
    for rec in (base, spec):
        t, bad = created_at(rec)
        if bad is None and t is not None:
            late = pl.evidence_time(t, now, f"the {rec.arm} record's created_at {rec.created_at}")
            bad = late.reason if late is not None else None
        if bad is not None:
            out.append(reason(MEMBER_TIME, bad))
        elif t is not None:
            times.append(t)
    if len(times) == 2 and abs(times[0] - times[1]) > pl.PROBE_ARMS_MAX_APART_SECONDS:
        out.append(reason(MEMBER_TIME, f"the arms were measured {abs(times[0] - times[1]) / 3600:,.1f} h apart "
                          f"({base.created_at} and {spec.created_at}), more than "
                          f"{pl.PROBE_ARMS_MAX_APART_SECONDS / 3600:g} h: not one experiment"))
    return out + energy_pair_defects(base, spec)


def _method_matches(plan: Plan, named: str) -> bool:
    """The record's method (vLLM spelling) or algorithm (SGLang's) is the plan's method in the plan's engine."""
    method = plan.method
    if method is None:
        return False
    eng = profile(plan.engine.kind)
    spec = plan.engine.speculative
    assert spec is not None  # a method implies the settings
    launched = eng.speculative_config(method, None, num_speculative_tokens=spec.num_speculative_tokens,
                                      num_steps=spec.num_steps, eagle_topk=spec.eagle_topk,
                                      num_draft_tokens=spec.num_draft_tokens)
    names = {method, *(str(v) for key in ("method", "algorithm") if (v := launched.get(key)))}
    names |= set(eng.algorithms(method) or ())
    return named in names or named.upper() in {n.upper() for n in names}


def plan_defects(plan: Plan, base: ProbeRecord, spec: ProbeRecord, phase: str, now: float) -> list[str]:
    """What keeps the records from being evidence about the plan's deployment (module docstring)."""
    out: list[str] = []
    served = plan.served_model_name
    version = parse_version(plan.engine.version)
    for rec in (base, spec):
        who = f"the {rec.arm} record"
        if rec.engine is None:
            out.append(f"{who}'s engine is unknown (null): it cannot be shown to be the plan's {plan.engine.kind}")
        if rec.model is None:
            out.append(f"{who}'s model is unknown (null): it cannot be shown to serve the plan's {served} "
                       "(engine.served_model_name, default target.name)")
        # Another engine or model first: the version of another engine is not the mismatch to name.
        ident = EvidenceIdentity(source=who, engine=rec.engine, models=(rec.model,) if rec.model else ())
        mismatch = match(ident, served_model_name=served, engine=plan.engine.kind, method=None, k=None)
        if mismatch is not None:
            out.append(mismatch.reason)
        if plan.engine.version is not None:
            got = parse_version(rec.engine_version)
            if rec.engine_version is None:
                out.append(f"{who}'s engine_version is unknown (null); the plan runs {plan.engine.kind} "
                           f"{plan.engine.version}")
            elif version is not None and (got is None or got[:len(version)] != version):
                out.append(f"{who} ran {rec.engine} {rec.engine_version}, the plan runs {plan.engine.kind} "
                           f"{plan.engine.version} (engine.version)")
        if phase == "post":
            t, _ = created_at(rec)
            if t is not None and now - t > pl.PROBE_MAX_AGE_SECONDS:
                out.append(f"{who} was measured {(now - t) / 3600:,.1f} h before this evaluation ({rec.created_at}), "
                           f"more than {pl.PROBE_MAX_AGE_SECONDS / 3600:g} h: history, not the rollout's evidence")
    if plan.method is None:
        out.append(f"the plan deploys no speculative decoding, the speculative record runs "
                   f"{record_method(spec) or 'an unnamed method'}")
        return out
    named = record_method(spec)
    if named is None:
        out.append(f"the speculative record's speculative.method is unknown: it cannot be shown to be the plan's "
                   f"{plan.method} (pass --speculative-config to specgate probe)")
    elif not _method_matches(plan, named):
        out.append(f"the speculative record runs {named}, the plan deploys {plan.method} "
                   "(engine.speculative.method)")
    k, _ = record_depth(spec)
    if plan.depth is not None:
        spec_keys = plan.engine.speculative
        keys = [key for key in DEPTH_KEYS if spec_keys is not None and getattr(spec_keys, key) is not None]
        if k is None:
            out.append(f"the speculative record's depth is unknown (speculative.{' / '.join(keys)} not recorded): "
                       f"it cannot be shown to be the plan's k = {plan.depth}")
        elif k != plan.depth:
            out.append(f"the speculative record drafts k = {k}, the plan declares k = {plan.depth} "
                       f"(engine.speculative.{' / '.join(keys)})")
    return out
