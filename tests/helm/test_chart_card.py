"""The chart passes the drafter's acceptance card to the exporter (issue 37 item 4): from the plan's
`evidence.reported.acceptance_card` by default, from `exporter.settings.acceptanceCard` when set, never otherwise.
The rendered environment variable is read back by the exporter's own reader (exporter.card.read_card)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from exporter.card import read_card
from tests.helm.render import CASES, container, env_of, parse_objects, template, write_values

CARD: dict[str, Any] = {"source": "a drafter card", "rates": "conditional", "row": "code",
                        "rows": [{"name": "overall", "positions": [0.8, 0.7]},
                                 {"name": "code", "positions": [0.9, 0.8], "acceptance_length": 2.6}]}


def _exporter_env(helm: Path, tmp_path: Path, plan_card: dict[str, Any] | None,
                  values_card: dict[str, Any] | None) -> dict[str, Any]:
    plan = copy.deepcopy(CASES["drafter"]["gate"]["plan"])
    if plan_card is not None:
        plan.setdefault("evidence", {}).setdefault("reported", {})["acceptance_card"] = plan_card
    values: dict[str, Any] = {"engine": {"speculativeConfig": {"method": "ngram", "num_speculative_tokens": 3}},
                              "gate": {"plan": plan, "hook": {"enabled": False}}}
    if values_card is not None:
        values["exporter"] = {"settings": {"acceptanceCard": values_card}}
    proc = template(helm, write_values(tmp_path, values), api=False)
    assert proc.returncode == 0, proc.stderr
    dep = next(o for o in parse_objects(proc.stdout) if o["kind"] == "Deployment")
    return env_of(container(dep, "exporter"))


def test_the_plans_card_reaches_the_exporter(helm: Path, tmp_path: Path) -> None:
    env = _exporter_env(helm, tmp_path, CARD, None)
    card = read_card(json.loads(env["SPECGATE_ACCEPTANCE_CARD"]["value"]))
    assert (card.row, card.unconditional) == ("code", (0.9, 0.9 * 0.8))


def test_values_win_over_the_plan_and_no_card_sets_nothing(helm: Path, tmp_path: Path) -> None:
    other = {**CARD, "row": "overall"}
    env = _exporter_env(helm, tmp_path, CARD, other)
    assert read_card(json.loads(env["SPECGATE_ACCEPTANCE_CARD"]["value"])).row == "overall"
    assert "SPECGATE_ACCEPTANCE_CARD" not in _exporter_env(helm, tmp_path, None, None)
