"""Writing an oracle fixture (tests/fixtures/oracle/) one row per line, so a diff names the row that moved.

Shared by the recorders that write that layout (sglang_adaptive.py, sglang_spec_resolution.py); a recorder runs as
a script with an engine venv's python, so its own folder is on sys.path and `from _fixture import …` needs no
install.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def dump(data: dict[str, Any]) -> str:
    """The header keys indented, then one row per line."""
    head = {k: v for k, v in data.items() if k != "rows"}
    body = ",\n".join("  " + json.dumps(r, sort_keys=True) for r in data["rows"])
    return json.dumps(head, indent=1)[:-2] + ',\n "rows": [\n' + body + "\n ]\n}\n"


def write(argv: list[str], default: Path, record: Callable[[], dict[str, Any]]) -> int:
    """Record and write to argv[0] (else the fixture itself); the script's exit code."""
    out = Path(argv[0]) if argv else default
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dump(record()))
    print(f"wrote {out}")
    return 0
