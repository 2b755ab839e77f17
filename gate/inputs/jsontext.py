"""What the gate writes for machines and people: strict JSON, printable text.

Why one place: every command that writes JSON (`check --format json` and `--record`, `tune`, `compare`,
`probe` records, `budget`, `kv`, `codesign`) and the HTTP gate's answers (`serve`: gate.webhook) write numbers
computed from inputs, and Python's `json.dumps` writes a non-finite float as `NaN` / `Infinity` — which is not
JSON (RFC 8259): the next reader (jq, Argo, Go, a later `specgate --previous`) fails or, worse, reads something
else. `dumps` refuses it with the path of the first such number (InputError: one line, exit 3; the HTTP gate
answers 500, an error and never a pass) instead of writing it. Refused rather than mapped to null: a null in
these documents means "not known", and a number that overflowed was computed from an input that is wrong, so
the run is invalid input, as every other impossible input is.

Text tables (compare's, tune's, check's) show names that come from inputs (mix names, plan names, points):
a line break or a terminal escape in one could forge a row or rewrite the screen. `printable` shows
every character that is not printable as its escape (`\\n`, `\\x1b`), so one value stays one cell.
"""

from __future__ import annotations

import json
import math
from typing import Any

from gate.status import InputError


def _first_non_finite(value: Any, path: str = "$") -> tuple[str, float] | None:
    """The JSON path and value of the first non-finite float in `value` (None when every number is finite)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    if isinstance(value, dict):
        for k, v in value.items():
            found = _first_non_finite(v, f"{path}.{k}")
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            found = _first_non_finite(v, f"{path}[{i}]")
            if found is not None:
                return found
    return None


def dumps(doc: Any, what: str, *, indent: int | None = 2, ensure_ascii: bool = True, **kw: Any) -> str:
    """`json.dumps(doc, allow_nan=False)`; a non-finite number is InputError naming `what` and its path."""
    try:
        return json.dumps(doc, indent=indent, ensure_ascii=ensure_ascii, allow_nan=False, **kw)
    except ValueError:
        found = _first_non_finite(doc)
        where = f" at {found[0]} ({found[1]!r})" if found is not None else ""
        raise InputError(f"{what}: a number that is not finite{where}; JSON has no NaN or Infinity, so nothing "
                         "was written (an input produced it: check the input it came from)") from None


def printable(text: str) -> str:
    """`text` with every non-printable character (line breaks, tabs, escapes, controls) as its escape."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)
