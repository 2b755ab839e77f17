"""tune reads a speculative probe record's k through the one depth rule (gate.model.depth via
gate.evidence.probe_vetting.record_depth), the k the gate's vetting reads: SGLang's verify block holds the root
token (num_draft_tokens 4 → k = 3, whatever num_steps says), a chain of num_steps is k = num_steps, vLLM's k is
num_speculative_tokens; a record that names no depth, or a depth out of range, is refused in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gate.model.speedup.curves import TuneInputError
from gate.tune.probe_costs import record_depth
from tests.gate.checks.acceptance.test_comparison import FAST, record

WHERE = Path("spec.json")


def _with(engine: str, spec: dict[str, Any]) -> Any:
    return record("speculative", {("chat", 1): FAST}).model_copy(update={"engine": engine, "speculative": spec})


@pytest.mark.parametrize(("engine", "spec", "k"), [
    ("vllm", {"method": "ngram", "num_speculative_tokens": 3}, 3),
    ("sglang", {"algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_num_draft_tokens": 4}, 3),
    ("sglang", {"algorithm": "EAGLE", "speculative_num_steps": 5, "speculative_num_draft_tokens": 4}, 3),
    ("sglang", {"algorithm": "EAGLE", "speculative_num_steps": 2}, 2),
])
def test_the_records_k_is_the_engines_own(engine: str, spec: dict[str, Any], k: int) -> None:
    assert record_depth(_with(engine, spec), WHERE) == k


@pytest.mark.parametrize("spec", [{"method": "ngram"}, {"method": "ngram", "num_speculative_tokens": 0},
                                  {"method": "ngram", "num_speculative_tokens": 65}])
def test_no_depth_or_a_depth_out_of_range_is_refused(spec: dict[str, Any]) -> None:
    with pytest.raises(TuneInputError, match="spec.json"):
        record_depth(_with("vllm", spec), WHERE)
