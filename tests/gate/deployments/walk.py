"""The newcomer's walk shared by the issue 36 deployment tests: `specgate init`, the TODO keys filled, `check`.

Why one walker: the claim each test makes is "from init plus only the keys init's comments ask for", so the filling
must be mechanical — a value lands only on a line init wrote with a TODO (on the line or on its section's line), or
on a key init wrote commented out with the comment saying what it is for (`# load_seconds: …`), or on a key the test
names as one it overrides of init's own choices (`overrides`, e.g. the staging mode the deployment really uses).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

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
