"""gate.probe.per_request: the per-request L histogram a probe cell records (the parsers are the engines',
tests/exporter/engines/<engine>/test_stream.py; the dispatch over a stream is tests/gate/probe/test_client_acceptance.py)."""

from __future__ import annotations

import pytest

from exporter.engines.base import PerRequestError
from gate.probe.per_request import histogram


def test_histogram_of_lengths():
    assert histogram([1.0, 1.5, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0]) == [2, 1, 1]
    with pytest.raises(PerRequestError, match="outside"):
        histogram([4.5], [1.0, 4.0])
    with pytest.raises(PerRequestError, match="ascending"):
        histogram([1.0], [2.0, 1.0])
