"""The floors (design.md "Floors"): every module imports only its own floor or lower ones.

| floor | modules |
|---|---|
| 0 rules | `exporter` (the sidecar, a separate program the gate builds on), `gate.status`, `gate.model` (physics, `depth`, `plausibility`, `identity`, `engines`), `gate.stats` |
| 1 input | `gate.inputs` (the only file readers), `gate.plan` |
| 2 evidence | `gate.evidence` (sources, the fleet, the previous record) |
| 2½ tools | `gate.probe`, `gate.tune`: they write evidence files and read floors 0–2 |
| 3 bill | `gate.bill` |
| 4 checks | `gate.checks` |
| 5 verdict | `gate.verdict` |
| 6 faces | `gate.cli`, `gate.commands`, `gate.webhook`, `gate.kube` |

Checked for every pair on the source (imports inside functions and under TYPE_CHECKING count too:
they run later, or shape the types), plus: no cycle between packages; the exporter never imports
the gate; the checks import no file reader; importing the controller never loads the HTTP gate;
importing the verdict loads no face. The import checks run a fresh interpreter so nothing this
test process already loaded can hide a dependency.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

FLOORS: dict[str, float] = {
    "exporter": 0, "gate.status": 0, "gate.model": 0, "gate.stats": 0,
    "gate.inputs": 1, "gate.plan": 1,
    "gate.evidence": 2,
    "gate.probe": 2.5, "gate.tune": 2.5,
    "gate.bill": 3,
    "gate.checks": 4,
    "gate.verdict": 5,
    "gate.cli": 6, "gate.commands": 6, "gate.webhook": 6, "gate.kube": 6,
}
FACES = ("gate.cli", "gate.commands", "gate.webhook", "gate.kube")
# Modules that read files (floor 1) or write evidence files (the tools' records): never a check's business.
READERS = ("gate.inputs", "gate.probe.record", "gate.probe.runner", "gate.tune.inputs")


def _module_of(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, module: str | None = None) -> list[str]:
    """Every module an `import` / `from … import` in the file names (relative imports resolved)."""
    here = (module or _module_of(path)).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            out.append(base)
            out += [f"{base}.{a.name}" for a in node.names]
    return out


def _within(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _room(name: str) -> str | None:
    """The floor table's entry a module belongs to (the longest matching prefix)."""
    best = None
    for prefix in FLOORS:
        if _within(name, (prefix,)) and (best is None or len(prefix) > len(best)):
            best = prefix
    return best


def _sources() -> list[Path]:
    return sorted(p for top in ("exporter", "gate") for p in (REPO / top).rglob("*.py"))


def _edges() -> list[tuple[str, str]]:
    """(importing module, imported name) for every import in exporter/ and gate/."""
    return [(_module_of(p), name) for p in _sources() for name in _imports(p)]


def test_every_module_has_a_floor() -> None:
    assert [m for m in map(_module_of, _sources()) if _room(m) is None and m != "gate"] == []


def test_imports_only_point_down() -> None:
    """No module imports a higher floor (tools count as 2½: above evidence, below the bill)."""
    up = sorted({f"{m} (floor {FLOORS[a]:g}) imports {n} (floor {FLOORS[b]:g})"
                 for m, n in _edges() if (a := _room(m)) and (b := _room(n)) and FLOORS[b] > FLOORS[a]})
    assert up == []


def test_the_exporter_never_imports_the_gate() -> None:
    assert sorted({f"{m}: {n}" for m, n in _edges() if _within(m, ("exporter",)) and _within(n, ("gate",))}) == []


def test_checks_read_no_files() -> None:
    """The lines judge facts: the readers (plans, configs, captures, probe records) sit below them."""
    assert sorted({f"{m}: {n}" for m, n in _edges() if _within(m, ("gate.checks",)) and _within(n, READERS)}) == []


def _package(name: str) -> str:
    """The package a module counts under for the cycle check: `gate.<first level>` or `exporter`."""
    parts = name.split(".")
    return ".".join(parts[:2]) if parts[0] == "gate" else parts[0]


def test_no_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for m, n in _edges():
        if _within(n, ("gate", "exporter")) and n != "gate" and _package(m) != _package(n):
            graph[_package(m)].add(_package(n))
    cycles: list[list[str]] = []

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif len(path) < 20:
                walk(nxt, path + [nxt])

    for start in sorted(graph):
        walk(start, [start])
    assert cycles == []


def test_the_static_check_sees_a_violation(tmp_path: Path) -> None:
    """The checker itself: an import inside a function and a relative import both count, and an
    upward import is found by the floor table."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    import gate.webhook\nfrom .. import cli\nfrom ..model import geometry\n",
                   encoding="utf-8")
    found = _imports(bad, "gate.checks.bad")
    assert sorted(n for n in found if _within(n, FACES)) == ["gate.cli", "gate.webhook"]
    assert "gate.model.geometry" in found
    assert FLOORS[_room("gate.webhook") or ""] > FLOORS[_room("gate.checks.bad") or ""]
    assert _room("gate.model.engines.vllm") == "gate.model" and _room("gate.plan.model") == "gate.plan"


@pytest.mark.parametrize("name", ["gate.verdict.evaluate", "gate.plan.model"])
def test_every_module_imports(name: str) -> None:
    assert _loaded_after(f"import {name}")


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
