"""The distribution as a user gets it: `python -m build` makes the sdist and, from that sdist, the wheel
(so the sdist is complete); the wheel goes into a fresh venv, where `specgate --help` and one
`specgate check` run from the installed package (not this checkout) and decide as the checkout does.

The distribution is `specgate-llm` (the name `specgate` on PyPI belongs to another project); the command
stays `specgate`. Building and installing use pip's normal index for the build backend and the runtime
dependencies, as `make venv` does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DIST = "specgate-llm"
PLAN = REPO / "examples" / "plans" / "seed004-qwen3.6-35b-a3b-mtp.yaml"
# What setuptools packages (pyproject.toml [tool.setuptools]): the build context the Dockerfile copies too.
CONTEXT = ("pyproject.toml", "README.md", "exporter", "gate")


def _run(cmd: list[str], cwd: Path, timeout: int = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """sdist and wheel of a copy of the build context (the shared checkout is not written to)."""
    src = tmp_path_factory.mktemp("src")
    for name in CONTEXT:
        p = REPO / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(p, src / name)
    out = tmp_path_factory.mktemp("dist")
    r = _run([sys.executable, "-m", "build", "--outdir", str(out), str(src)], cwd=src)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (sdist,) = out.glob("specgate_llm-*.tar.gz")
    (wheel,) = out.glob("specgate_llm-*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def venv(built: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fresh-venv") / "venv"
    r = _run([sys.executable, "-m", "venv", str(root)], cwd=root.parent)
    assert r.returncode == 0, r.stderr
    r = _run([str(root / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(built["wheel"])],
             cwd=root.parent)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return root


def test_wheel_metadata(built: dict[str, Path]) -> None:
    with zipfile.ZipFile(built["wheel"]) as z:
        names = z.namelist()
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        msg = Parser().parsestr(z.read(meta).decode())
        (eps,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entry_points = z.read(eps).decode()
    assert msg["Name"] == DIST
    assert msg["Requires-Python"] == ">=3.11"
    assert any(r.startswith("prometheus-client==") for r in msg.get_all("Requires-Dist"))
    assert "specgate = gate.cli:main" in entry_points
    assert any(n.startswith("exporter/replay_data/") and n.endswith(".txt") for n in names), "replay captures"
    assert not any(n.startswith("tests/") for n in names)


def test_sdist_holds_the_sources(built: dict[str, Path]) -> None:
    with tarfile.open(built["sdist"]) as t:
        names = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert {"pyproject.toml", "README.md", "gate/cli.py", "exporter/names.py", "exporter/replay_data/models.json"} <= names


def test_help_from_the_installed_wheel(venv: Path, tmp_path: Path) -> None:
    r = _run([str(venv / "bin" / "specgate"), "--help"], cwd=tmp_path, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "check" in r.stdout and "exporter" in r.stdout
    where = _run([str(venv / "bin" / "python"), "-c", "import gate, exporter; print(gate.__file__, exporter.__file__)"],
                 cwd=tmp_path, timeout=60)
    assert where.returncode == 0 and all(str(venv) in p for p in where.stdout.split()), where.stdout


def test_one_check_from_the_installed_wheel_decides_as_the_checkout(venv: Path, tmp_path: Path) -> None:
    plan_dir = tmp_path / "plans"
    shutil.copytree(PLAN.parent, plan_dir)  # plan paths are relative to the plan file
    plan = plan_dir / PLAN.name
    wheel_run = _run([str(venv / "bin" / "specgate"), "check", "--plan", str(plan), "--format", "json"],
                     cwd=tmp_path, timeout=120)
    dev_run = _run([str(REPO / ".venv" / "bin" / "specgate"), "check", "--plan", str(plan), "--format", "json"],
                   cwd=tmp_path, timeout=120)
    assert wheel_run.returncode in (0, 1, 2), wheel_run.stderr
    assert wheel_run.returncode == dev_run.returncode
    got, want = json.loads(wheel_run.stdout), json.loads(dev_run.stdout)
    assert got["decision"] == want["decision"]
    assert {k: v["status"] for k, v in got["checks"].items()} == {k: v["status"] for k, v in want["checks"].items()}
    assert {0: "pass", 1: "fail", 2: "inconclusive"}[wheel_run.returncode] == got["decision"]
