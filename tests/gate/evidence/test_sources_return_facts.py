"""Sources return facts and rows, never verdicts (design.md "Floors"): no module under gate/evidence/ judges.

Why a test of its own: the layering test (tests/test_layering.py) lets floor 2 import `gate.status`, a floor-0
module, and it must (`InputError` is how a bad input becomes exit 3). What it must not take from there is the
verdict vocabulary — `Status` and the rules that produce one (`window_slo_status`, `fleet_status`, `combine`,
`decide`, …): a source that sets a status is a check hidden in the evidence (the Prometheus fleet judged its
own pods until gate.checks.acceptance.fleet_rule took that over). Checked on the source with `ast`, imports
inside functions and under TYPE_CHECKING included; the scanner is shown to catch a planted violation.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
EVIDENCE = REPO / "gate" / "evidence"
STATUS = "gate.status"
# What a source may not take from gate.status: a status, a decision, or a rule that makes one.
VERDICTS = frozenset({"Status", "Decision", "LineResult", "SEVERITY", "combine", "decide", "exit_code",
                      "window_slo_status", "fleet_status"})


def verdict_imports(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for every import of the verdict vocabulary: a name of `VERDICTS` from gate.status, a star
    import of it, or the module itself (`import gate.status`, `from gate import status`: `status.Status` then)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == STATUS:
                    yield node.lineno, f"import {STATUS}"
        elif isinstance(node, ast.ImportFrom) and not node.level:
            if node.module == STATUS:
                for alias in node.names:
                    if alias.name in VERDICTS or alias.name == "*":
                        yield node.lineno, f"from {STATUS} import {alias.name}"
            elif node.module == "gate":
                for alias in node.names:
                    if alias.name == "status":
                        yield node.lineno, "from gate import status"


def _offenders() -> list[str]:
    out = []
    for path in sorted(EVIDENCE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), rel)
        out += [f"{rel}:{line}: {what}" for line, what in verdict_imports(tree)]
    return out


def test_no_evidence_module_imports_a_status_or_a_status_rule() -> None:
    assert list(EVIDENCE.rglob("*.py")), "gate/evidence/ not found"
    assert _offenders() == []


@pytest.mark.parametrize("code", [
    "from gate.status import Status\n",
    "from gate.status import InputError, fleet_status as rule\n",
    "def f():\n    from gate.status import window_slo_status\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gate.status import combine\n",
    "from gate.status import *\n",
    "import gate.status\n",
    "import gate.status as s\n",
    "from gate import status\n",
])
def test_a_planted_verdict_import_is_caught(code: str) -> None:
    assert list(verdict_imports(ast.parse(code)))


@pytest.mark.parametrize("code", [
    "from gate.status import InputError\n",
    "from gate.model import plausibility as pl\n",
    "from gate.evidence.base import FleetFacts\n",
    '"""Status: see gate.status.fleet_status"""\nstatus = "pass"\n',
])
def test_facts_and_input_errors_are_let_be(code: str) -> None:
    assert not list(verdict_imports(ast.parse(code)))
