"""Credentials out of every URL the exporter shows (errors, logs, notices).

An engine URL may carry `user:password@` (a password may itself contain `@`, unencoded) and a
query string may carry a token (`?token=...`). Whatever is written to a log or an error message
goes through `redact_url` first: the user info is dropped, a query string or fragment becomes
`?<redacted>`. One function, so the exporter and the gate redact the same way.
"""

from __future__ import annotations

import re

# A URL inside a text: scheme, then the authority up to the first "/", "?", "#" or blank; the path;
# an optional query and fragment. The user info is everything in the authority up to its LAST "@"
# (how urllib splits it), so "u:p@ss@host" loses "u:p@ss@", not just "u:p@".
_URL = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<authority>[^/?#\s]*)(?P<path>[^?#\s]*)"
                  r"(?P<query>[?#]\S*?(?=[:,;.)]*(?:\s|$)))?")  # punctuation after a URL is the text's
REDACTED_QUERY = "?<redacted>"


def _one(m: re.Match[str]) -> str:
    authority = m.group("authority").rpartition("@")[2]
    query = REDACTED_QUERY if m.group("query") else ""
    return m.group("scheme") + authority + m.group("path") + query


def redact_url(text: str) -> str:
    """Every URL in `text` without user info, query string or fragment (`?<redacted>` marks one)."""
    return _URL.sub(_one, text) if "://" in text else text
