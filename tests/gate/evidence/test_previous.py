"""gate.evidence.previous: reading the last run record and what changed since (issue 10, item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.evidence.previous import compare, load_previous
from gate.status import InputError


def _write(tmp_path: Path, doc: object) -> Path:
    p = tmp_path / "record.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


def test_reads_a_record_and_a_whole_check_document(tmp_path: Path) -> None:
    rec = {"model_artifact": "t", "model_revision": "r1", "drafter_revision": "d1", "decision": "pass",
           "generated_at": "2026-12-01T09:00:00+00:00", "plan": "p"}
    prev = load_previous(_write(tmp_path, rec))
    assert prev.model_revision == "r1" and prev.drafter_revision == "d1"
    assert prev.generated_at == pytest.approx(1796115600.0)  # 2026-12-01T09:00:00Z
    assert load_previous(_write(tmp_path, {"decision": "pass", "run_record": rec})).model_revision == "r1"


def test_changes() -> None:
    from gate.evidence.previous import PreviousRecord

    prev = PreviousRecord("r.json", "p", "r1", "d1", "pass", 0.0)
    c = compare(prev, "r2", "d1")
    assert c.target_changed is True and c.drafter_changed is False
    assert compare(prev, None, "d2").target_changed is None  # unknown now: no change can be shown


def test_bad_records_are_invalid_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a run record"):
        load_previous(_write(tmp_path, {"hello": 1}))
    with pytest.raises(InputError, match="not a JSON object"):
        load_previous(_write(tmp_path, [1, 2]))
    with pytest.raises(InputError, match="generated_at"):
        load_previous(_write(tmp_path, {"model_revision": "r", "generated_at": "yesterday"}))
    with pytest.raises(InputError, match="character device"):
        load_previous("/dev/zero")
