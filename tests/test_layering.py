"""Dependencies point one way (design.md "Layout"), checked on the source and on what importing loads.

- the exporter never imports the gate (it ships alone as the sidecar);
- the budget lines (`gate/checks/`) never import a face: the CLI (`gate.cli`, `gate.commands`),
  the HTTP gate (`gate.webhook`) or the controller (`gate.kube`);
- the model (`gate/model/`) never imports evidence (`gate.evidence`): geometry and pools are
  arithmetic on configs, whatever was measured;
- evidence (and the fleet, `gate.evidence.fleet`) never imports the checks or a face; `gate.verdict.answer` and `gate.verdict.gate_metrics`, shared by the
  HTTP gate and the controller, import neither;
- importing the controller never loads the HTTP gate's module (both answer through `gate.verdict.answer`).

Static checks read every `import` (also those inside functions, which run later); the import check
runs a fresh interpreter so nothing this test process already loaded can hide a dependency.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

FACES = ("gate.cli", "gate.commands", "gate.webhook", "gate.kube")


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


def _offenders(package: str, forbidden: tuple[str, ...]) -> list[str]:
    """Imports of `forbidden` modules in a package (every file under it) or in one module."""
    root = REPO.joinpath(*package.split("."))
    files = sorted(root.rglob("*.py")) if root.is_dir() else [root.with_suffix(".py")]
    return sorted(f"{p.relative_to(REPO)}: {name}" for p in files
                  for name in _imports(p) if _within(name, forbidden))


@pytest.mark.parametrize(("package", "forbidden"), [
    ("exporter", ("gate",)),
    ("gate.checks", FACES),
    ("gate.model", ("gate.evidence", *FACES)),
    ("gate.evidence", ("gate.checks", *FACES)),
    # the fleet is evidence-level (the Prometheus source's per-pod verdicts): no checks, no faces
    ("gate.evidence.fleet", ("gate.checks", *FACES)),
    # what the services share: it must not pull in either face
    ("gate.verdict.answer", FACES),
    ("gate.verdict.gate_metrics", FACES),
])
def test_imports_point_one_way(package: str, forbidden: tuple[str, ...]) -> None:
    assert _offenders(package, forbidden) == []


def test_the_static_check_sees_a_violation(tmp_path: Path) -> None:
    """The checker itself: an import inside a function and a relative import both count."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    import gate.webhook\nfrom .. import cli\nfrom ..model import geometry\n",
                   encoding="utf-8")
    found = [n for n in _imports(bad, "gate.checks.bad") if _within(n, FACES)]
    assert sorted(found) == ["gate.cli", "gate.webhook"]


def _loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint('\\n'.join(sorted(sys.modules)))\n"
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    return set(p.stdout.split())


def test_importing_the_controller_never_loads_the_http_gate() -> None:
    loaded = _loaded_after("import gate.kube.controller\nimport gate.commands.controller")
    assert "gate.kube.controller" in loaded
    assert "gate.webhook" not in loaded


def test_importing_the_checks_loads_no_face() -> None:
    loaded = _loaded_after("import gate.verdict.evaluate")
    assert not [m for m in loaded if _within(m, FACES)]
