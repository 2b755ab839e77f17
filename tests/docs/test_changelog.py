"""CHANGELOG.md and `specgate --version` agree, and the changelog's citations are real commits.

Why: users gate rollouts on what the changelog says changed (decisions, statuses, metric meanings); a
version it does not have, or a commit it names that does not exist, makes it unreadable as a record.
"""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib

import pytest

from gate import cli
from tests.docs._gen import ROOT

CHANGELOG = ROOT / "CHANGELOG.md"


def _pyproject_version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"])


def test_version_flag_prints_the_distributions_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"specgate {importlib.metadata.version('specgate-llm')}\n"


def test_version_falls_back_to_pyproject(monkeypatch: pytest.MonkeyPatch) -> None:
    """A source tree that was never pip-installed has no distribution metadata: pyproject.toml says."""
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert cli.version() == _pyproject_version()


def test_version_as_a_process() -> None:
    done = subprocess.run([sys.executable, "-m", "gate.cli", "--version"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"specgate {_pyproject_version()}\n", "")


def test_changelog_has_unreleased_and_the_current_version() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    versions = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert versions[0] == "Unreleased"
    assert cli.version() in versions, f"CHANGELOG.md has no section for {cli.version()}"
    for v in versions:  # Keep a Changelog: every section heading has its link definition at the bottom
        assert re.search(rf"^\[{re.escape(v)}\]: \S+$", text, re.M), v


def test_every_cited_commit_exists() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    cited = sorted(set(re.findall(r"(?<![0-9a-z/.])([0-9a-f]{7})(?![0-9a-z])", text)))
    assert len(cited) >= 30
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True,
                             text=True, timeout=60)
    if shallow.returncode != 0 or shallow.stdout.strip() == "true":
        # A checkout without history (an sdist, a depth-1 CI clone) cannot resolve old commits: the citations are
        # then held to their form only (seven hex digits each, above) — said here rather than failing on history.
        return
    done = subprocess.run(["git", "cat-file", "--batch-check"], cwd=ROOT, input="\n".join(cited) + "\n",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    missing = [line for line in done.stdout.splitlines() if line.endswith(" missing")]
    assert missing == [], "commits CHANGELOG.md cites are not in this clone (a shallow clone needs " \
                          "`git fetch --unshallow`)"
    assert all(" commit " in line for line in done.stdout.splitlines()), done.stdout
