"""Budget line 2, kv_pool: does the pool the engine actually allocates hold the request mixes that matter?

Why against the allocated pool: a configured ceiling (`--max-total-tokens 600000`) does not
mean the engine allocated it — with NEXTN the same launch got 161,728 tokens (seed 000). The
drafter's KV is sized from its own geometry and scope (seed 002), and both its geometric
need and what the engine charges for it are reported. A mix fits when concurrency ×
(prompt + output) resident tokens fit; that assumption is stated in every reason.

Seed 000's inspection order: "read the allocation after changing speculation, then test the
request mix that actually matters". On a vLLM linear-attention hybrid (the bill's `request_blocks`) a mix is judged
in blocks instead (`_block_fit`): every request holds fixed state blocks whatever its length. A pool that is only predicted says "predicted, not
observed"; in `post` the engine's own allocation decides (a reported or predicted pool alone
is inconclusive there), and a prediction that differs from the allocation by more than one
block is reported with both numbers. With `budgets.gpu_memory_bytes` the per-rank memory bill
(gate.bill.gpu_memory: weights / TP + pool × bytes per token ≤ gpu_memory_bytes ×
memory_fraction) is judged here too: over is a fail. Weights per rank alone above the whole GPU is a fail
whatever else is unknown (no fraction or pool makes that geometry serve the model: 671B at TP 1, issue 36).
"""

from __future__ import annotations

from typing import Any

from gate.bill.budget import Allocated, Budget, MixBill, PoolBill
from gate.bill.gpu_memory import GpuMemoryBill, gpu_memory_bill, sentence
from gate.bill.pool import live_pools
from gate.checks.base import CheckContext
from gate.model.engines.base import RequestBlocks
from gate.plan.model import Plan
from gate.status import LineResult, Status

ASSUMPTION = ("assuming all {c} requests are resident at once with every prompt token (as reported per request) "
              "and all {o} output tokens")


# What decides the pool (issue 21 item 6): an allocation, observed or reported, or the input that predicts one.
POOL_KEYS = ("a live engine's allocation (evidence.exporter_url, engine_url or prometheus), "
             "evidence.reported.kv_pool_tokens, or engine.kv_cache_memory_bytes for a prediction")


def _pool_keys(plan: Plan) -> str:
    """What decides the pool, without asking for `engine.kv_cache_memory_bytes` when the plan already gives it (a
    hybrid target's prediction then lacks something else, which the notes name)."""
    if plan.engine.kv_cache_memory_bytes is None:
        return POOL_KEYS
    return ("a live engine's allocation (evidence.exporter_url, engine_url or prometheus) or "
            "evidence.reported.kv_pool_tokens (engine.kv_cache_memory_bytes is given; the notes say why it predicts "
            "no pool)")


def _n(x: float | int | None) -> str:
    return "unknown" if x is None else f"{int(x):,}"


def memory(plan: Plan, budget: Budget) -> GpuMemoryBill | None:
    """The per-rank GPU memory bill, when the plan sets budgets.gpu_memory_bytes."""
    gpu = plan.budgets.gpu_memory_bytes
    if gpu is None:
        return None
    pool = budget.pool
    tokens = pool.judged_tokens
    basis = (f"allocated, {_sourced(plan, pool.allocated)}" if pool.allocated is not None else
             "predicted, not observed" if tokens is not None else None)
    d = budget.drafter
    return gpu_memory_bill(
        engine=plan.engine.kind, gpu_memory_bytes=gpu, memory_fraction=plan.engine.memory_fraction, tp=plan.engine.tp,
        drafter_tp=plan.drafter.tp if plan.drafter else None, target_weights_bytes=budget.target.weights_bytes,
        drafter_weights_bytes=d.weights_bytes if d else None, drafter_embedded=plan.drafter_embedded,
        has_drafter=plan.has_drafter, pool_tokens=tokens, pool_basis=basis,
        target_bytes_per_token=budget.target.kv_bytes_per_token,
        drafter_bytes_per_token=d.engine_charge_bytes_per_token if d else None,
        kv_cache_memory_bytes=plan.engine.kv_cache_memory_bytes, predicted_kv_bytes=pool.predicted_kv_bytes)


def cannot_serve(plan: Plan, budget: Budget, gm: GpuMemoryBill) -> str | None:
    """The weights per rank alone above the whole GPU (issue 36 item 3: DeepSeek-V3's 671B at TP 1 passed): no memory
    fraction, pool or context makes that geometry serve the model, so it is a fail whatever else is unknown."""
    parts = [(name, total, per_rank, tp) for name, total, per_rank, tp in (
        ("target", budget.target.weights_bytes, gm.target_weights_per_rank, plan.engine.tp),
        ("drafter", budget.drafter.weights_bytes if budget.drafter else None, gm.drafter_weights_per_rank,
         (plan.drafter.tp if plan.drafter else None) or plan.engine.tp),
    ) if total is not None and per_rank]
    weights = sum(p[2] for p in parts)
    if weights <= gm.gpu_memory_bytes:
        return None
    how = " + ".join(f"{name} {total:,} B / TP {tp}" for name, total, _, tp in parts)
    return (f"this geometry cannot serve the model: weights per rank {weights:,} B ({how}) > {gm.gpu_memory_bytes:,} B "
            "of GPU memory (budgets.gpu_memory_bytes) before any KV cache; more ranks (engine.tp) or smaller weights")


def under_reserved(budget: Budget) -> str | None:
    """The engine sizes its pool charging the drafter less KV than the drafter's own geometry holds (issue 35: SGLang
    charges an EAGLE-3 head on an MLA target the target's per-layer bytes): the draft pool then takes more memory
    than the sizing reserved, so the predicted pool is not what fits the memory. A fail, not a pass with a note.
    Each mix's need is on the engine's basis (gate.model.pools.drafter_kv_need: llama.cpp's draft model holds its
    own context's cells, so its need is its reservation), so no engine is judged apart here."""
    d = budget.drafter
    if d is None or d.kv_bytes_per_token is None or d.engine_charge_bytes_per_token is None:
        return None
    over = [(m.name, m.drafter_need_bytes, m.drafter_charged_bytes) for m in budget.mixes
            if m.drafter_need_bytes is not None and m.drafter_charged_bytes is not None
            and m.drafter_need_bytes > m.drafter_charged_bytes]
    if not over:
        return None
    name, need, charged = max(over, key=lambda x: x[1] - x[2])
    return (f"{budget.pool.engine} under-reserves the drafter's KV: it sizes the pool charging "
            f"{d.engine_charge_bytes_per_token:,} B/token, the drafter's geometry holds {d.kv_bytes_per_token:,} B/token "
            f"({d.kv_bytes_per_token - d.engine_charge_bytes_per_token:,} B/token more); {name} needs {need:,} B of "
            f"drafter KV against {charged:,} B charged, so the draft pool outgrows the memory the sizing reserved")


def check(ctx: CheckContext) -> LineResult:
    """The pool line, then the GPU memory bill and the post phase's demand for the engine's own allocation."""
    result = _pool_line(ctx)
    plan, budget = ctx.plan, ctx.budget
    status, reason, values = result.status, result.reason, dict(result.values)
    under = under_reserved(budget)
    if under is not None:
        status, reason = Status.FAIL, f"{under}; {reason}"
    gm = memory(plan, budget)
    if gm is not None:
        values["gpu_memory"] = gm.to_json()
        reason += "; " + sentence(gm)
        if gm.over:
            status = Status.FAIL
        elif gm.unknown and status is not Status.FAIL:
            status = Status.INCONCLUSIVE
        cannot = cannot_serve(plan, budget, gm)
        if cannot is not None:
            status, reason = Status.FAIL, f"{cannot}; {reason}"
    live_with, _ = live_pools(plan, ctx.metrics)
    if ctx.phase == "post" and live_with is None and status is not Status.FAIL and plan.has_drafter:
        status = Status.INCONCLUSIVE
        reason += ("; post phase: the engine's own allocation decides (seed 000: read the allocation after changing "
                   "speculation), and no live engine reported one")
    return LineResult(status, reason, values)


def _pool_line(ctx: CheckContext) -> LineResult:
    """Values: bytes per token of both models, predicted and allocated pools with and without the
    drafter, the judged pool and its basis, one entry per request mix, and the notes of the bill."""
    plan, budget = ctx.plan, ctx.budget
    pool = budget.pool
    target_bpt = budget.target.kv_bytes_per_token
    drafter = budget.drafter
    judged = pool.judged_tokens
    basis = "allocated" if pool.allocated is not None else ("predicted" if judged is not None else None)
    values: dict[str, Any] = {
        "target_kv_bytes_per_token": target_bpt,
        "drafter_kv_bytes_per_token": drafter.kv_bytes_per_token if drafter else None,
        "drafter_kv_scope": drafter.kv_scope if drafter else None,
        "drafter_engine_charge_bytes_per_token": drafter.engine_charge_bytes_per_token if drafter else None,
        "predicted_tokens_with_drafter": pool.predicted_with_drafter,
        "predicted_tokens_without_drafter": pool.predicted_without_drafter,
        "allocated_tokens": pool.allocated.tokens if pool.allocated else None,
        "allocated_source": pool.allocated.source if pool.allocated else None,
        "allocated_tokens_without_drafter": pool.allocated_without_drafter.tokens if pool.allocated_without_drafter else None,
        "allocated_without_drafter_source": (pool.allocated_without_drafter.source
                                             if pool.allocated_without_drafter else None),
        "configured_max_total_tokens": pool.configured_max_total_tokens,
        "context_cap_tokens": pool.context_cap_tokens,
        "judged_pool_tokens": judged,
        "judged_pool_basis": basis,
        "mixes": [],
        "notes": list(pool.notes) + (drafter.notes if drafter else []) + budget.target.notes,
    }

    fails: list[str] = []
    cap_fails: list[str] = []
    fits: list[str] = []
    unjudged: list[str] = []
    largest = 0
    for m in budget.mixes:
        fit = None if judged is None else m.demand_tokens <= judged
        without = pool.allocated_without_drafter.tokens if pool.allocated_without_drafter else pool.predicted_without_drafter
        fit_without = None if without is None else m.demand_tokens <= without
        blocks_why = ""
        if m.demand_blocks is not None:
            fit, fit_without, blocks_why = _block_fit(pool, m)
            if fit is None and judged is not None:
                unjudged.append(f"{m.name}: {blocks_why}")
        entry = {"name": m.name, "concurrency": m.concurrency, "prompt_tokens": m.prompt_tokens,
                 "output_tokens": m.output_tokens, "demand_tokens": m.demand_tokens, "fits": fit,
                 "fits_without_drafter": fit_without,
                 "drafter_need_bytes": m.drafter_need_bytes, "drafter_charged_bytes": m.drafter_charged_bytes}
        if m.demand_blocks is not None:
            entry["demand_blocks"] = m.demand_blocks
        if pool.context_cap_tokens is not None:
            entry["within_context_cap"] = m.request_tokens <= pool.context_cap_tokens
            if m.request_tokens > pool.context_cap_tokens:
                cap_fails.append(f"{m.name}: one request of {m.prompt_tokens:,} + {m.output_tokens:,} = "
                                 f"{m.request_tokens:,} tokens exceeds the {pool.context_cap_tokens:,}-token context cap")
        values["mixes"].append(entry)
        largest = max(largest, m.demand_tokens)
        if fit is False and m.demand_blocks is not None:
            fails.append(f"{m.name} does not fit: {blocks_why}; "
                         + ASSUMPTION.format(c=m.concurrency, o=m.output_tokens)
                         + "; that many cannot all be resident, so requests would queue (a queue, not necessarily a "
                         "failed run)")
        elif fit is False:
            src = f" ({_sourced(plan, pool.allocated)})" if pool.allocated else " (predicted from geometry, not observed)"
            extra = ""
            if entry["fits_without_drafter"]:
                extra = f"; without the drafter the {without:,}-token pool holds it"
            fails.append(
                f"{m.name} needs {m.concurrency} × ({m.prompt_tokens:,} + {m.output_tokens:,}) = "
                f"{m.demand_tokens:,} resident tokens > {judged:,} {basis} with the drafter{src}, "
                + ASSUMPTION.format(c=m.concurrency, o=m.output_tokens)
                + "; that many cannot all be resident, so requests would queue (a queue, not necessarily a failed run)"
                + extra)
        elif fit:
            fits.append(m.name)

    drafter_clause = _drafter_clause(budget)
    if fails or cap_fails:
        ok = f"; {', '.join(fits)} fit{'s' if len(fits) == 1 else ''}" if fits else ""
        return LineResult(Status.FAIL, "; ".join(fails + cap_fails) + ok + drafter_clause, values)
    if not budget.mixes:
        pool_txt = f"the {judged:,}-token {basis} pool" if judged is not None else "the pool (unknown)"
        return LineResult(Status.INCONCLUSIVE, f"no request mix in the plan's workload (workload[]): nothing to fit against "
                          f"{pool_txt}" + drafter_clause, values)
    if unjudged and judged is not None:
        return LineResult(Status.INCONCLUSIVE, "; ".join(unjudged) + drafter_clause, values)
    if judged is None:
        missing = "; ".join(pool.notes) or "no allocated pool reported and none predicted"
        return LineResult(Status.INCONCLUSIVE, f"pool unknown — no allocated pool (live or evidence.reported) and "
                          f"no prediction ({missing}); largest mix needs {largest:,} tokens; give {_pool_keys(plan)}"
                          + drafter_clause, values)
    if basis == "allocated":
        src = _sourced(plan, pool.allocated) if pool.allocated else ""
        pred = ""
        if pool.predicted_with_drafter is not None and pool.allocated is not None:
            diff = pool.allocated.tokens - pool.predicted_with_drafter
            pred = f" (predicted {pool.predicted_with_drafter:,}, {'exact' if diff == 0 else f'{diff:+,}'})"
            block = pool.block_size or 1
            if abs(diff) > block:
                pred = (f" (the prediction {pool.predicted_with_drafter:,} differs from the allocation "
                        f"{pool.allocated.tokens:,} by {diff:+,} tokens, more than one {block}-token block: the "
                        "engine's allocation decides)")
        reason = (f"all {len(fits)} request mix(es) fit the {judged:,}-token allocated pool ({src}){pred}; "
                  f"the largest needs {largest:,} tokens, assuming each mix's requests are all resident at once "
                  "with their full prompt and output")
    else:
        reason = (f"all {len(fits)} request mix(es) fit the {judged:,}-token pool predicted, not observed "
                  f"({plan.engine.kind} accounting from the configs; no allocated pool reported yet — read the "
                  f"allocation after the switch); largest needs {largest:,} tokens")
    in_blocks = [m for m in budget.mixes if m.demand_blocks is not None]
    if in_blocks and pool.request_blocks is not None:
        big = max(in_blocks, key=lambda m: m.demand_blocks or 0)
        reason += (f"; judged in blocks (vLLM linear-attention hybrid: every request holds its state blocks whatever "
                   f"its length): {big.name} needs {big.demand_blocks:,} blocks")
    return LineResult(Status.PASS, reason + drafter_clause, values)


def _block_fit(pool: PoolBill, m: MixBill) -> tuple[bool | None, bool | None, str]:
    """(fits, fits without the drafter, why) of a mix on a pool judged in blocks (vLLM linear-attention hybrids).

    Why blocks: the pool's tokens are vLLM's kv_cache_size_tokens, num_gpu_blocks / b(L) x L at L = max_model_len
    (engine.context_cap_tokens), with b(t) = attention groups x cdiv(t, block) + state groups x state blocks (2 + k
    with prefix caching, 1 + k without; k = 0 without speculation). A request of t < L tokens still pays every state
    block, so concurrency x t <= tokens can pass a mix vLLM cannot hold. A mix fits when concurrency x b(prompt +
    output) <= num_gpu_blocks: the predicted blocks directly; an allocated pool in tokens is read as
    kv_cache_size_tokens at L (the number vLLM logs, and the exporter's first choice), so the test is concurrency x
    b(t) x L <= tokens x b(L). Without the drafter b is the bill's `request_blocks_without_drafter` where it differs
    (no drafter layers, no speculative state blocks). Unknown (None) where the blocks or L are missing: no pass on a
    token comparison that is known to be optimistic.
    """
    rb = pool.request_blocks
    if rb is None or m.demand_blocks is None:  # the bill sets demand_blocks only with request_blocks
        return None, None, "no per-request blocks for a pool judged in blocks"
    cap = pool.context_cap_tokens

    def one(req: RequestBlocks, allocated: Allocated | None, predicted_blocks: int | None) -> tuple[bool | None, str]:
        per = req.blocks(m.request_tokens, pool.prefix_cache)
        demand = m.concurrency * per
        need = f"{m.concurrency} × {per:,} blocks = {demand:,} blocks"
        state = (f"each request holds {req.state_groups * req.state_blocks(pool.prefix_cache)} linear-attention "
                 f"state block(s) whatever its length beside {req.attention_groups} × cdiv({m.request_tokens:,}, "
                 f"{req.block_size}) attention block(s)")
        if allocated is not None:
            if cap is None:
                return None, (f"{need} ({state}); the allocated pool's {allocated.tokens:,} tokens are priced at "
                              "max_model_len, unknown here: give engine.context_cap_tokens")
            full = req.blocks(cap, pool.prefix_cache)
            return (demand * cap <= allocated.tokens * full,
                    f"{need} ({state}) against the {allocated.tokens:,}-token allocated pool "
                    f"({allocated.source}), read as vLLM's kv_cache_size_tokens: about "
                    f"{allocated.tokens * full // cap:,} blocks of {full:,} per {cap:,}-token request")
        if predicted_blocks is None:
            return None, f"{need} ({state}); no predicted block count to hold them"
        return demand <= predicted_blocks, (f"{need} ({state}) against {predicted_blocks:,} blocks predicted, not "
                                            "observed (vLLM's num_gpu_blocks)")

    fit, why = one(rb, pool.allocated, pool.predicted_blocks_with_drafter)
    fit_without, _ = one(pool.request_blocks_without_drafter or rb, pool.allocated_without_drafter,
                         pool.predicted_blocks_without_drafter)
    return fit, fit_without, why


def _sourced(plan: Plan, allocated: Allocated) -> str:
    """The allocation's source, labelled reported (the plan's evidence.reported) or observed (an engine said it)."""
    rep = plan.evidence.reported.kv_pool_tokens
    kind = "reported" if rep is not None and allocated.source == rep.source else "observed"
    return f"{kind}: {allocated.source}"


def _drafter_clause(budget: Budget) -> str:
    d = budget.drafter
    if d is None:
        return ""
    if d.kv_bytes_per_token is None:
        return "; drafter KV geometry unknown"
    need = [(m.name, m.drafter_need_bytes, m.drafter_charged_bytes) for m in budget.mixes
            if m.drafter_need_bytes is not None]
    s = f"; drafter KV {d.kv_bytes_per_token:,} B/token ({d.kv_scope} scope)"
    if need:
        name, nb, cb = max(need, key=lambda x: x[2] or 0)
        s += f", {name}: geometric need {nb:,} B vs {cb:,} B charged by {budget.pool.engine}"
    elif d.kv_scope == "block" and d.block_tokens:
        s += (f": a block-only drafter needs {d.block_tokens} tokens = {d.block_tokens * d.kv_bytes_per_token:,} B per "
              f"request, while {budget.pool.engine} charges {d.kv_bytes_per_token:,} B for every token of the request")
    return s
