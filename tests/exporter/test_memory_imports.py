"""What the sidecar holds in memory, beyond its data: no prometheus_client at run time, counts as arrays.

Issue 26's soak budget (48 MiB for a 32-stream page) is spent mostly on imports; prometheus_client cost
~1.9 MiB for one string (`CONTENT_TYPE_LATEST`), and a histogram's counts as float objects ~2.6 MiB of
the 5-minute ring (bench/exporter.py --soak).
"""

from __future__ import annotations

import subprocess
import sys
from array import array

from exporter.engines.base import Histogram


def test_content_type_is_prometheus_clients_own() -> None:
    """The literal the server sends is prometheus_client's constant (the classic text format, version 1.0.0)."""
    from prometheus_client import CONTENT_TYPE_LATEST as theirs

    from exporter.server import CONTENT_TYPE_LATEST as ours

    assert ours == theirs


def test_the_sidecar_does_not_import_prometheus_client() -> None:
    """Importing the server (what `python -m exporter serve` runs) loads no prometheus_client module."""
    code = ("import sys\nimport exporter.server, exporter.cli\n"
            "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'prometheus_client')\n"
            "assert not bad, bad\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]


def test_histogram_counts_are_one_array_whatever_built_them() -> None:
    """A tuple given is converted, so histograms compare and hash by value whoever made them."""
    a = Histogram((1.0, float("inf")), (3.0, 5.0), 5.0, 2.5)
    b = Histogram((1.0, float("inf")), array("d", [3.0, 5.0]), 5.0, 2.5)
    c = Histogram.of(((1.0, 3.0), (float("inf"), 5.0)), 5.0, 2.5)
    assert type(a.counts) is array and a.counts.typecode == "d"
    assert a == b == c and hash(a) == hash(b) == hash(c)
    assert a != Histogram((1.0, float("inf")), (3.0, 6.0), 6.0, 2.5)
    assert a.buckets == ((1.0, 3.0), (float("inf"), 5.0))
