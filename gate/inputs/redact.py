"""Credentials out of every text the gate shows (reports, run records, progress lines).

Why its own module: a URL may carry `user:password@` (`--prometheus https://u:p@thanos`),
and the evidence sources name their URL in every reason, error and progress line. The
evidence modules and the run record both redact through this one function: the exporter's
(`exporter.redact.redact_url`: user info up to the last `@` of the authority — a password may
contain `@` — and query strings, where tokens ride), so both programs redact the same way.
"""

from __future__ import annotations

from exporter.redact import redact_url

__all__ = ["redact_url"]
