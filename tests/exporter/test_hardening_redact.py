"""Credentials never reach a log line or an error message (issue 14, item 6: the exporter's part).

`exporter.redact.redact_url` drops URL user info (a password may contain `@`) and replaces query
strings and fragments (a token may ride there) with `?<redacted>`.
"""

from __future__ import annotations

import pytest

from exporter.redact import redact_url


@pytest.mark.parametrize("text, shown", [
    ("http://127.0.0.1:8000/metrics", "http://127.0.0.1:8000/metrics"),
    ("http://u:p@host:8000/metrics", "http://host:8000/metrics"),
    ("http://u:p@ss@host:8000/metrics", "http://host:8000/metrics"),  # "@" in the password: nothing of it left
    ("https://user:p%40ss:w@rd@thanos.example/api/v1/query", "https://thanos.example/api/v1/query"),
    ("http://host:8000/metrics?token=sekrit&x=1", "http://host:8000/metrics?<redacted>"),
    ("http://u:pw@host/metrics#frag", "http://host/metrics?<redacted>"),
    ("http://host:8000", "http://host:8000"),
    ("cannot reach http://admin:hunter2@10.0.0.1:8000/metrics?key=abc: connection refused",
     "cannot reach http://10.0.0.1:8000/metrics?<redacted>: connection refused"),
    ("two: http://a:b@x/ and https://c:d@y/z?q=1", "two: http://x/ and https://y/z?<redacted>"),
    ("no url here, user:pass@host", "no url here, user:pass@host"),
])
def test_redact_url(text: str, shown: str):
    out = redact_url(text)
    assert out == shown
    for secret in ("hunter2", "sekrit", "p@ss", "w@rd", ":pw@", "key=abc", "q=1"):
        if secret not in shown:
            assert secret not in out
