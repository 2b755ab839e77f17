"""Backfill the mixin's per-pod window facts (group specgate.fleet-facts) into a real Prometheus or VictoriaMetrics.

Used by tests/observability/test_fleet_recorded_live.py and bench/fleet.py. Recording rules evaluate only going
forward; a fleet loaded with hours of history (tests/gate/fleet_stack.py) needs its facts written for that history:

- Prometheus: `promtool tsdb create-blocks-from rules` evaluates the group's rules against the running server over
  [start, end] at the group's interval and writes blocks, which are moved into the server's data directory; the
  server is then restarted with the rule file loaded, so its rules API lists the group (its interval is what the
  gate checks).
- VictoriaMetrics: what `vmalert -replay` does (no vmalert binary is installed here, `ls .tools/bin`): each rule's
  expression is asked with `query_range` at step = the group's interval over [start, end], and every answered
  series is written back under the rule's name and labels (`/api/v1/import`). VictoriaMetrics without vmalert
  lists no rule groups, so the gate checks the interval by the samples per row.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import requests
import yaml

from tests.gate import fleet_stack

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "prometheus" / "specgate-rules.yaml"
GROUP = "specgate.fleet-facts"


def facts_group(rules: Path = RULES) -> dict[str, Any]:
    """The fleet-facts group of the rendered rule file."""
    doc = yaml.safe_load(rules.read_text())
    return next(g for g in doc["groups"] if g["name"] == GROUP)


def write_rules(path: Path, group: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"groups": [group]}, sort_keys=False))
    return path


def interval_seconds(group: dict[str, Any]) -> int:
    text = str(group["interval"])
    assert text.endswith("s"), text
    return int(text[:-1])


def prometheus(server: fleet_stack.Server, spec: fleet_stack.FleetSpec, workdir: Path,
               group: dict[str, Any] | None = None, start: int | None = None) -> fleet_stack.Server:
    """Backfill the facts over the fleet's history (from `start`, default its first sample) with promtool, then
    restart the server with the blocks and the rule file (the old server is stopped; the new one is returned)."""
    group = group or facts_group()
    start = spec.start if start is None else start
    rules = write_rules(workdir / "fleet-facts.yaml", group)
    out = workdir / "rule-blocks"
    subprocess.run([str(fleet_stack.tool("promtool")), "tsdb", "create-blocks-from", "rules",
                    f"--start={start}", f"--end={spec.end}", f"--url={server.url}",
                    f"--output-dir={out}", f"--eval-interval={interval_seconds(group)}s", str(rules)],
                   check=True, capture_output=True)
    server.stop()
    data = workdir / "data"
    for block in out.iterdir():
        if block.is_dir():
            shutil.move(str(block), data / block.name)
    (workdir / "prometheus.yml").write_text(f"global:\n  scrape_interval: 1h\nrule_files:\n  - {rules}\n")
    port = fleet_stack.free_port()
    log = workdir / "prometheus-rules.log"
    with log.open("w") as fh:
        proc = subprocess.Popen([str(fleet_stack.tool("prometheus")), f"--config.file={workdir / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={data}", f"--web.listen-address=127.0.0.1:{port}",
                                 "--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h"],
                                stdout=fh, stderr=subprocess.STDOUT)
    new = fleet_stack.Server("prometheus", f"http://127.0.0.1:{port}", proc, log)
    fleet_stack._wait_ready(new, "/-/ready")
    return new


def victoriametrics(server: fleet_stack.Server, spec: fleet_stack.FleetSpec,
                    group: dict[str, Any] | None = None, start: int | None = None) -> None:
    """vmalert -replay's work: every rule over [start, end] at the group's interval, written back as its series."""
    group = group or facts_group()
    start = spec.start if start is None else start
    step = interval_seconds(group)
    with requests.Session() as s:
        for rule in group["rules"]:
            r = s.get(server.url + "/api/v1/query_range",
                      params={"query": rule["expr"], "start": start, "end": spec.end, "step": f"{step}s",
                              "nocache": "1"}, timeout=300)
            r.raise_for_status()
            lines = []
            for series in r.json()["data"]["result"]:
                metric = {k: v for k, v in series["metric"].items() if k != "__name__"}
                metric.update(rule.get("labels") or {})
                metric["__name__"] = rule["record"]
                values = [float(v) for _, v in series["values"]]
                stamps = [int(float(t) * 1000) for t, _ in series["values"]]
                lines.append(json.dumps({"metric": metric, "values": values, "timestamps": stamps}))
            if lines:
                s.post(server.url + "/api/v1/import", data="\n".join(lines).encode(), timeout=300).raise_for_status()
        s.get(server.url + "/internal/force_flush", timeout=60).raise_for_status()
