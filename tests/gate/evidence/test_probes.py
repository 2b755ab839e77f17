"""Probe records as evidence (gate/evidence/probes.py): the validated reader, read once by gather."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from gate.evidence.gather import gather_metrics, request_for
from gate.evidence.probes import ProbeError, ProbeRecord, gather_probes, load_record
from gate.plan.model import plan_from_dict
from tests.gate.checks.acceptance.test_comparison import BASE, FAST, record
from tests.gate.helpers import tiny_plan


def _write(tmp_path: Path, name: str, rec: ProbeRecord) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(rec.to_json()))
    return p


def test_a_fifo_is_refused_at_once_never_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "rec.json"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    with pytest.raises(ProbeError, match="FIFO"):
        load_record(fifo)
    assert time.monotonic() - t0 < 2


def test_gather_probes_keeps_every_record_or_the_first_reason(tmp_path: Path) -> None:
    base = _write(tmp_path, "b.json", record("baseline", {("chat", 1): BASE}))
    spec = _write(tmp_path, "s.json", record("speculative", {("chat", 1): FAST}))
    assert gather_probes([]) is None
    ev = gather_probes([base, spec])
    assert ev is not None and ev.error is None and [r.arm for r in ev.records] == ["baseline", "speculative"]
    assert len(ev.arm("baseline")) == 1 and ev.files == (str(base), str(spec))
    (tmp_path / "bad.json").write_text("{")
    bad = gather_probes([base, tmp_path / "bad.json"])
    assert bad is not None and bad.records == () and bad.error is not None and "not JSON" in bad.error


def test_gather_metrics_reads_the_plans_probe_records_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gate.evidence.probes as probes

    files = [_write(tmp_path, "b.json", record("baseline", {("chat", 1): BASE})), _write(tmp_path, "s.json", record("speculative", {("chat", 1): FAST}))]
    data = tiny_plan("draft")
    data["evidence"] = {"probes": [str(f) for f in files]}
    plan = plan_from_dict(data)
    reads: list[str] = []
    real = probes.read_text

    def counted(p: object, *a: object) -> object:
        reads.append(str(p))
        return real(p, *a)  # type: ignore[arg-type]

    monkeypatch.setattr(probes, "read_text", counted)
    ev = gather_metrics(plan, "pre", [], None, request_for(plan, wait=False))
    assert ev.probes is not None and len(ev.probes.records) == 2
    assert reads == [str(f) for f in files]
