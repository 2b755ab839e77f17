"""Credentials out of every text the gate shows (reports, run records, progress lines).

Why its own module: a URL may carry `user:password@` (`--prometheus https://u:p@thanos`),
and the evidence sources name their URL in every reason, error and progress line. The
evidence modules and the run record both redact through this one function.
"""

from __future__ import annotations

import re

_CREDENTIALS = re.compile(r"://[^/@\s]+@")


def redact_url(text: str) -> str:
    """Drop `user:password@` from every URL in a text (never write credentials into a record)."""
    return _CREDENTIALS.sub("://", text)
