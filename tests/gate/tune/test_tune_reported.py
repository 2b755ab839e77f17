"""Reported stays reported in `specgate tune` too: counters from capture pages marked `# specgate: reported:` (seed
004's counters, rebuilt as pages by examples/plans/make_seed004_captures.py) are shown under their reported source,
never as plain "captures" (which reads as measured here); unmarked pages keep the plain source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.cli import main

REPO = Path(__file__).resolve().parents[3]
SEED004 = REPO / "examples" / "plans" / "captures"
NGRAM = REPO / "tests" / "fixtures" / "vllm"


def _sources(capsys: pytest.CaptureFixture[str], before: Path, after: Path) -> list[str]:
    rc = main(["tune", "--captures", str(before), str(after), "--target-step-ms", "14.14",
               "--verify-cycle-ms", "31.16", "--format", "json"])
    assert rc == 0
    return [c["source"] for c in json.loads(capsys.readouterr().out)["measured_k"]]


def test_reported_pages_are_shown_as_reported(capsys: pytest.CaptureFixture[str]) -> None:
    (src,) = _sources(capsys, SEED004 / "seed004-0-start.txt", SEED004 / "seed004-1-after-2k.txt")
    assert src.startswith("captures seed004-0-start.txt, seed004-1-after-2k.txt (reported: ")


def test_unmarked_pages_keep_the_plain_source(capsys: pytest.CaptureFixture[str]) -> None:
    (src,) = _sources(capsys, NGRAM / "metrics-ngram-before.txt", NGRAM / "metrics-ngram-after.txt")
    assert src == "captures metrics-ngram-before.txt, metrics-ngram-after.txt"
