"""The engine oracles' fixtures (tests/fixtures/oracle/, recorded by tools/oracle/ in the engines' own venvs) and
the rows EXCEPTIONS.md states the gate differs on, with the engine's reason.

Why one module: every replay test (SGLang adaptive, spec resolution and KV sizing; vLLM validation and KV sizing;
llama-server's vocabulary) read the exceptions file with its own copy of the same parser.
"""

from __future__ import annotations

import re
from pathlib import Path

ORACLE = Path(__file__).resolve().parents[3] / "fixtures" / "oracle"


def exceptions(name: str) -> dict[int, str]:
    """The rows of fixture `name` that EXCEPTIONS.md lists (`- <name> #<row>: <why>`), with the stated reason."""
    rows = {}
    for line in (ORACLE / "EXCEPTIONS.md").read_text().splitlines():
        m = re.match(r"- (\S+) #(\d+): (.+)", line)
        if m and m.group(1) == name:
            rows[int(m.group(2))] = m.group(3)
    return rows
