"""The fast-burn alert goes all the way: the real Prometheus (2.42) evaluating the time-compressed rules sends it
to a real Alertmanager (Debian's 0.25 binaries, on 127.0.0.1), which notifies a webhook receiver on loopback.
Same session stack as test_prometheus_live.py (tests/observability/conftest.py): the ngram arm above the target,
then the random-draft arm at L 1.0, then no traffic."""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import datetime

from tests.observability.sources import load_rules

FAST = "SpecgateAcceptanceSLOFastBurn"
RULE = next(r for r in load_rules() if r.name == FAST)


def _alerts(notifications: list[dict], status: str) -> list[dict]:
    return [a for n in notifications for a in n["alerts"]
            if a["labels"].get("alertname") == FAST and a["status"] == status]


def _ts(s: str) -> float:
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def test_fast_burn_reaches_the_webhook_receiver(live_stack) -> None:
    s = live_stack
    assert s.webhook is not None and s.alertmanager_url is not None
    notes = s.webhook.received()
    firing = _alerts(notes, "firing")
    assert firing, f"no firing {FAST} notification; received {len(notes)} notifications\n" + s.logs()
    a = firing[0]
    assert a["labels"]["severity"] == "critical"
    assert a["labels"]["model"] and a["labels"]["engine"] == "vllm"
    # The annotations as the rules file states them: a static summary, a description with the values filled in.
    assert a["annotations"]["summary"] == RULE.raw["annotations"]["summary"]
    assert "{{" not in a["annotations"]["description"]
    assert a["labels"]["model"] in a["annotations"]["description"]
    assert a["annotations"]["runbook_url"].endswith("#" + FAST.lower())
    # Not before the drop: the ngram arm (above target) plays for the first steps.
    first_below = min(float(t) for r in s.prom.query_range("specgate_spec_windows_below_slo_total > 0",
                                                             s.replay_started - 10, s.finished)
                      for t, _ in r["values"])
    assert _ts(a["startsAt"]) >= first_below - 1
    n = next(n for n in notes if a in n["alerts"])
    assert n["receiver"] == "webhook" and n["groupLabels"]["alertname"] == FAST


def test_fast_burn_resolves_at_the_receiver_once_traffic_stops(live_stack) -> None:
    """After the scenario nothing completes: Prometheus resolves the alert and Alertmanager says so."""
    s = live_stack
    deadline = time.time() + 20
    while not _alerts(s.webhook.received(), "resolved") and time.time() < deadline:
        time.sleep(0.5)
    resolved = _alerts(s.webhook.received(), "resolved")
    assert resolved, "the fast burn never resolved at the receiver\n" + s.logs()
    assert _ts(resolved[-1]["endsAt"]) > _ts(resolved[-1]["startsAt"])


def test_alertmanager_api_lists_what_prometheus_sent(live_stack) -> None:
    with urllib.request.urlopen(f"{live_stack.alertmanager_url}/api/v2/status", timeout=5) as r:
        status = json.loads(r.read())
    assert status["versionInfo"]["version"] == "0.25.0"
    with urllib.request.urlopen(f"{live_stack.alertmanager_url}/api/v2/alerts?active=true&silenced=true"
                                "&inhibited=true&unprocessed=true", timeout=5) as r:
        alerts = json.loads(r.read())
    # Prometheus keeps sending what is still firing (e.g. the pool alert for the draft arm's smaller pool).
    assert all(a["labels"]["alertname"].startswith("Specgate") for a in alerts)
