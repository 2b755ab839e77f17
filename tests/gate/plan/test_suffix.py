"""`suffix` (vLLM suffix decoding, arctic-inference) is a plan method like ngram: no drafter artifact.

The e2e arm `suffix` of tests/e2e/test_vllm_arms.py judges such a plan against a real engine.
"""

from __future__ import annotations

import pytest

from gate.model.depth import DRAFTERLESS_METHODS
from gate.plan.model import PlanError, plan_from_dict
from tests.gate.helpers import tiny_plan


def test_suffix_plan_has_no_drafter() -> None:
    p = tiny_plan("ngram")
    p["engine"]["speculative"] = {"method": "suffix", "num_speculative_tokens": 8}
    plan = plan_from_dict(p)
    assert plan.method == "suffix" and not plan.has_drafter and not plan.drafter_embedded
    assert DRAFTERLESS_METHODS == {"ngram", "suffix"}


def test_suffix_with_a_drafter_is_incoherent() -> None:
    p = tiny_plan("ngram")
    p["engine"]["speculative"] = {"method": "suffix", "num_speculative_tokens": 8}
    p["drafter"] = {"name": "x"}
    with pytest.raises(PlanError, match="suffix has no drafter"):
        plan_from_dict(p)
