"""The floors (design.md "Floors"), as the import contracts in .importlinter, plus what only a run can show.

| contract | what it holds |
|---|---|
| `floors` | every gate package imports only its own floor or lower ones; every package has a floor (exhaustive) |
| `exporter-below-gate` | the sidecar never imports the gate |
| `exporter-layers`, `model-layers` | the layers inside `exporter` and inside `gate.model` |
| `exporter-engines-independent`, `profiles-independent`, `evidence-backends-independent`, `lines-independent` | siblings that know nothing of each other |
| `no-cycles` | no cycle between sibling packages or modules, at any depth |
| `checks-fetch-nothing`, `floor0-pure` | the checks import no tool, reader or sidecar I/O; the gate's floor 0 no sidecar I/O |
| `network`, `kubernetes`, `importlib`, `no-requests` | those packages only in the modules named for them |

`lint(root)` runs them on any copy of the tree (tests/test_guards_bite.py plants a violation of each). The engine
packages and the check lines the independence contracts name are held equal to their registries here. The import
checks below run a fresh interpreter so nothing this test process already loaded can hide a dependency.
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest

from exporter.engines import ADAPTERS
from gate.checks import CHECKS
from gate.model.engines import PROFILES

REPO = Path(__file__).resolve().parents[1]
CONFIG = ".importlinter"
FACES = ("gate.cli", "gate.commands", "gate.webhook", "gate.kube")
LINT = ("from importlinter.cli import lint_imports_command as c; import sys; "
        "sys.exit(c.main(['--no-cache', '--no-logo', *sys.argv[1:]], standalone_mode=False))")


def lint(root: Path = REPO, *only: str) -> subprocess.CompletedProcess[str]:
    """lint-imports on the tree at `root` (only the contracts `only`, when given), with that tree's modules first
    on the path."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    limit = [a for c in only for a in ("--contract", c)]
    return subprocess.run([sys.executable, "-c", LINT, str(root / CONFIG), *limit], capture_output=True, text=True,
                          cwd=root, env=env, timeout=120)


def _config() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / CONFIG, encoding="utf-8")
    return cfg


def contract_ids() -> list[str]:
    prefix = "importlinter:contract:"
    return [s.removeprefix(prefix) for s in _config().sections() if s.startswith(prefix)]


def contract_modules(contract: str, key: str = "modules") -> list[str]:
    return _config()[f"importlinter:contract:{contract}"][key].split()


def test_the_contracts_hold() -> None:
    p = lint()
    assert p.returncode == 0, p.stdout + p.stderr
    assert "BROKEN" not in p.stdout


@pytest.mark.parametrize(("contract", "registry"), [
    ("exporter-engines-independent", [f"exporter.engines.{k}" for k in ADAPTERS]),
    ("profiles-independent", [f"gate.model.engines.{k}" for k in PROFILES]),
    ("lines-independent", [f"gate.checks.{line}" for line in CHECKS]),
])
def test_the_independence_contracts_follow_the_registries(contract: str, registry: list[str]) -> None:
    """A fifth engine or a sixth line is named in .importlinter the day it is registered, or this fails."""
    assert sorted(contract_modules(contract)) == sorted(registry)


@pytest.mark.parametrize("name", ["gate.verdict.evaluate", "gate.plan.model"])
def test_every_module_imports(name: str) -> None:
    assert _loaded_after(f"import {name}")


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    return set(p.stdout.split())


def test_importing_the_controller_never_loads_the_http_gate() -> None:
    loaded = _loaded_after("import gate.kube.controller\nimport gate.commands.controller")
    assert "gate.kube.controller" in loaded
    assert "gate.webhook" not in loaded


def test_importing_the_verdict_loads_no_face() -> None:
    loaded = _loaded_after("import gate.verdict.evaluate")
    assert not [m for m in loaded if _within(m, FACES)]


def test_the_plan_loads_no_evidence() -> None:
    """The plan is data: validating one needs the rules (floor 0), never a source."""
    loaded = _loaded_after("import gate.plan.model")
    assert not [m for m in loaded if _within(m, ("gate.evidence", "gate.checks", "gate.verdict"))]
