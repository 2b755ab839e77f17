"""The newcomer's walk shared by the issue 36 deployment tests: `specgate init`, the TODO keys filled, `check`.

Why one walker: the claim each test makes is "from init plus only the keys init's comments ask for", so the filling
must be mechanical — a value lands only on a line init wrote with a TODO (on the line or on its section's line), or
on a key init wrote commented out with the comment saying what it is for (`# load_seconds: …`), or on a key the test
names as one it overrides of init's own choices (`overrides`, e.g. the staging mode the deployment really uses).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest

from gate.cli import main

KEY = re.compile(r"( *)(# )?([A-Za-z_]\w*):(.*)$")


def fill(text: str, values: Mapping[str, str], overrides: frozenset[str] = frozenset()) -> tuple[str, set[str]]:
    """The plan with `values` on the lines init asked for them (see the module docstring), and the keys filled."""
    out: list[str] = []
    path: list[tuple[int, str, bool]] = []  # (indent, key, its line has a TODO)
    filled: set[str] = set()
    for line in text.splitlines():
        m = KEY.fullmatch(line)
        if m is None:
            out.append(line)
            continue
        indent, commented, key, rest = len(m.group(1)), m.group(2) is not None, m.group(3), m.group(4)
        while path and path[-1][0] >= indent:
            path.pop()
        dotted = ".".join([*(k for _, k, _ in path), key])
        todo = "TODO" in rest or bool(path and path[-1][2])
        if not commented and not rest.partition("#")[0].strip():
            path.append((indent, key, "TODO" in rest))
        if dotted in values and (todo or commented or dotted in overrides):
            out.append(f"{m.group(1)}{key}: {values[dotted]}")
            filled.add(dotted)
        else:
            out.append(line)
    return "\n".join(out) + "\n", filled


LINE = re.compile(r"^(\w+)\s+(pass|fail|warn|inconclusive|n/a)\s", re.M)


def statuses(out: str) -> dict[str, str]:
    """Each budget line's status in `check`'s text output."""
    return {m.group(1): m.group(2) for m in LINE.finditer(out)}


def init_pair(tmp: Path, target: Path, drafter: Path, *args: str) -> tuple[Path, str]:
    """`specgate init` on copies of the two configs in `tmp` with the engine flags `args`: the plan and its text."""
    for src in (target, drafter):
        shutil.copy(src, tmp / src.name)
    plan = tmp / "plan.yaml"
    assert main(["init", "--target", str(tmp / target.name), "--drafter", str(tmp / drafter.name), *args,
                 "--out", str(plan)]) == 0
    return plan, plan.read_text()


def check(plan: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, dict[str, str]]:
    """`specgate check` on the plan: its exit code, its text (printed, for the test's log) and each line's status."""
    capsys.readouterr()
    rc = main(["check", "--plan", str(plan)])
    out = capsys.readouterr().out
    print(out)
    return rc, out, statuses(out)
