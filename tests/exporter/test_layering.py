"""Dependencies point one way: gate may import exporter; exporter never imports gate."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

EXPORTER = Path(__file__).parents[2] / "exporter"


def test_no_exporter_module_imports_gate():
    offenders = []
    for path in EXPORTER.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.name}: {n}" for n in names if n == "gate" or n.startswith("gate.")]
    assert offenders == []


def test_python_m_exporter_runs_without_importing_gate():
    code = ("import runpy, sys\n"
            "sys.argv = ['exporter', '--help']\n"
            "try:\n    runpy.run_module('exporter', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "assert not any(m == 'gate' or m.startswith('gate.') for m in sys.modules), 'gate imported'\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "--engine-url" in p.stdout and "SPECGATE_ENGINE_URL" in p.stdout


def _exporter_imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("exporter")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("exporter"):
            out.add(node.module or "")
    return out


def test_inside_the_exporter_dependencies_point_down():
    """names is a leaf (the gate and the dashboard generator import it cheaply); engines, derive and
    windows know nothing of state, exposition or serving; the exposition never reaches the server."""
    assert _exporter_imports(EXPORTER / "names.py") == set()
    upper = {"exporter.state", "exporter.collect", "exporter.server", "exporter.cli"}
    lower = [*(EXPORTER / "engines").glob("*.py"), EXPORTER / "derive.py", EXPORTER / "windows.py",
             EXPORTER / "formulas.py"]
    for path in lower:
        assert not {m for m in _exporter_imports(path) if ".".join(m.split(".")[:2]) in upper}, path.name
    for path in (EXPORTER / "collect").glob("*.py"):
        assert not _exporter_imports(path) & {"exporter.server", "exporter.cli", "exporter.scrape"}, path.name
