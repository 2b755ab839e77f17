"""SGLang's depth schedule: `--speculative-adaptive-config`, read the way SGLang 0.5.23 reads it.

`sglang/srt/speculative/adaptive_spec_params.py`: tiers keyed by batch size, each with `candidate_steps`;
`AdaptiveSpeculativeParams._find_closest_bs` routes a batch to the largest tier key <= batch (the smallest tier
below it), and the tier's EMA picks one of its candidates at run time. With topk 1 (adaptive requires it) a step
proposes one token, so k = steps and a band of the engine-neutral `exporter.schedule.DepthSchedule` carries the
candidates' range [k_min, k_max]. Pure, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping

from exporter.schedule import DepthSchedule, _normalised

SGLANG_SOURCE = "sglang speculative_adaptive_config"

# SGLang 0.5.23 adaptive_spec_params.DEFAULT_ADAPTIVE_CONFIG's tiers (batch-size key -> candidate steps), used when
# `--speculative-adaptive` is on without `--speculative-adaptive-config`. Only the candidates shape the schedule;
# the hysteresis knobs steer which candidate the EMA picks, not which ones it may pick.
SGLANG_DEFAULT_CANDIDATE_STEPS: Mapping[str, tuple[int, ...]] = {
    "1": (1, 3, 5, 7),
    "8": (0, 1, 3),
    "32": (0, 1),
    "64": (0,),
}


def sglang_adaptive_schedule(config: Mapping[str, object] | None) -> DepthSchedule:
    """SGLang 0.5.23's adaptive tiers as bands (None = DEFAULT_ADAPTIVE_CONFIG).

    _load_adaptive_config: keys that are not digit strings are knobs, skipped; each tier needs a non-empty list
    of non-negative int candidate_steps; at least one tier. _find_closest_bs: batch b runs tier
    max{key <= b} (the smallest tier when b is below every key), so tier key_i covers [key_i, key_{i+1} − 1]
    and the first tier also covers every batch below it. k = steps (topk 1: one token per step).
    """
    tiers: dict[int, tuple[int, ...]] = {}
    if config is None:
        tiers = {int(key): steps for key, steps in SGLANG_DEFAULT_CANDIDATE_STEPS.items()}
    else:
        if not isinstance(config, Mapping):
            raise ValueError(f"speculative_adaptive_config must be a JSON object, got {type(config).__name__}")
        for key, entry in config.items():
            if not isinstance(key, str) or not key.isdigit():
                continue
            steps = entry.get("candidate_steps") if isinstance(entry, Mapping) else None
            if (
                not isinstance(steps, list)
                or not steps
                or not all(isinstance(s, int) and s >= 0 for s in steps)
            ):
                raise ValueError(f"BS {key}: candidate_steps must be a list of non-negative ints, got {steps!r}")
            tiers[int(key)] = tuple(int(s) for s in steps)
        if not tiers:
            raise ValueError(
                "speculative_adaptive_config must contain at least one integer-string "
                'BS key, e.g. {"1": {"candidate_steps": [1,3,7]}}. '
                f"Got keys: {list(config.keys())}"
            )
    keys = sorted(tiers)
    pieces: list[tuple[int, int | None, int, int]] = []
    for i, tier in enumerate(keys):
        start = 1 if i == 0 else max(1, tier)
        end = keys[i + 1] - 1 if i + 1 < len(keys) else None
        if end is not None and end < start:  # a tier "0" shadowed by a tier "1": no batch reaches it
            continue
        candidates = tiers[tier]
        pieces.append((start, end, max(candidates), min(candidates)))
    return _normalised(SGLANG_SOURCE, pieces)
