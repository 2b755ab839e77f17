"""Reported stays reported in `specgate tune` too: counters from capture pages marked `# specgate: reported:` (seed
004's counters, rebuilt as pages by examples/plans/make_seed004_captures.py) are shown under their reported source,
never as plain "captures" (which reads as measured here), and L at their own k has basis `reported`, never
`measured` (issue 34 item 5); unmarked pages keep the plain source and `measured`."""

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


def _tune(capsys: pytest.CaptureFixture[str], before: Path, after: Path, fmt: str) -> str:
    rc = main(["tune", "--captures", str(before), str(after), "--target-step-ms", "14.14",
               "--verify-cycle-ms", "31.16", "--format", fmt])
    assert rc == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("marked", [True, False])
def test_l_at_the_runs_own_k_is_reported_where_the_pages_are(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                               marked: bool) -> None:
    """Seed 004's pages as they are (marked reported), and the same pages without the mark."""
    pages = []
    for name in ("seed004-0-start.txt", "seed004-1-after-2k.txt"):
        lines = (SEED004 / name).read_text(encoding="utf-8").splitlines(keepends=True)
        (tmp_path / name).write_text("".join(x for x in lines if marked or not x.startswith("# specgate: reported:")),
                                     encoding="utf-8")
        pages.append(tmp_path / name)
    own, other = ("reported", "measured") if marked else ("measured", "reported")
    doc = json.loads(_tune(capsys, pages[0], pages[1], "json"))
    bases = {p["k"]: p["acceptance_basis"] for p in doc["points"]}
    assert bases[3] == own and bases[1] == bases[2] == "exact" and bases[4] == "extrapolated"
    text = _tune(capsys, pages[0], pages[1], "text")
    assert f"geometric mean of the {own} ratios" in text and f"467 drafts {own}" in text
    assert f" {other} " not in text.split("assumptions:", 1)[0] and f"drafts {other}" not in text
