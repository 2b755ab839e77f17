"""`specgate tune --exporter URL` reads the sidecar's page through the bounded fetch (gate.tune.inputs.from_exporter):
a dripping answer ends at the timeout, an oversized one is refused, both one line and exit 3."""

from __future__ import annotations

import socket
import time

import pytest

from gate.cli import main
from gate.inputs.fetch import PAGE_BYTES
from gate.model.speedup.curves import TuneInputError
from gate.tune.inputs import from_exporter
from tests.gate.inputs.fetch_servers import RawServer, Request, answer, drip

PAGE = (b"# TYPE specgate_spec_decode_drafts_total counter\nspecgate_spec_decode_drafts_total 10\n")


def test_a_dripping_exporter_page_ends_at_the_timeout() -> None:
    def handler(req: Request, conn: socket.socket) -> None:
        drip(conn, answer(200, PAGE * 50, "text/plain"))

    with RawServer(handler) as srv:
        t0 = time.monotonic()
        with pytest.raises(TuneInputError, match="did not answer within 0.3s"):
            from_exporter(srv.url, timeout=0.3)
        assert time.monotonic() - t0 < 1.2


def test_an_oversized_exporter_page_is_one_line_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    head = f"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {PAGE_BYTES + 1}\r\n\r\n".encode()
    with RawServer(lambda req, c: c.sendall(head)) as srv:
        t0 = time.monotonic()
        rc = main(["tune", "--exporter", srv.url])
        took = time.monotonic() - t0
    err = capsys.readouterr().err
    assert rc == 3 and took < 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and f"bytes (limit {PAGE_BYTES})" in err
