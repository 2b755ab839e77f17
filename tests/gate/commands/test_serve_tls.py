"""`specgate serve --tls-cert --tls-key`: HTTPS with certificates made here by the real `openssl` binary (a
test CA and a leaf for 127.0.0.1), against clients that verify them: the right CA connects, a wrong CA is
refused, plain HTTP gets no answer, the bearer token is still required, a rotated pair is served from the
next connection on without a restart (and a broken rotation keeps the old pair), and a missing file or a key
that is not the certificate's is one line and exit 3.

The server is the real `gate.webhook` server on 127.0.0.1 (ephemeral port) with the scripted evaluator of
tests/k8s/test_k8s_webhook.py; one test runs the real `specgate serve` process.
"""

from __future__ import annotations

import fcntl
import logging
import os
import pty
import select
import shutil
import socket
import subprocess
import termios
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from gate.cli import main
from gate.webhook import GateConfig, GateServer, make_server
from tests.k8s.test_k8s_webhook import Scripted

REPO = Path(__file__).resolve().parents[3]
PLAN = REPO / "examples" / "plans" / "seed004-qwen3.6-35b-a3b-mtp.yaml"
TOKEN = "tls-test-token"
OPENSSL = shutil.which("openssl")
pytestmark = pytest.mark.skipif(OPENSSL is None, reason="no openssl binary")  # present on every dev image


@dataclass(frozen=True)
class Pki:
    """A CA and one leaf it signed (SAN IP:127.0.0.1), as PEM files."""

    ca: Path
    cert: Path
    key: Path


def _openssl(*args: str, cwd: Path) -> None:
    out = subprocess.run([str(OPENSSL), *args], cwd=cwd, capture_output=True, text=True, timeout=30, check=False)
    assert out.returncode == 0, out.stderr


def make_pki(d: Path, name: str) -> Pki:
    """`openssl req -x509` for the CA, then a CSR signed by it; P-256 keys (fast to make)."""
    d.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", f"/CN={name}-ca",
             cwd=d)
    _openssl("req", *ec, "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=specgate-serve", cwd=d)
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "tls.crt", "-days", "2", "-extfile", "ext.cnf", cwd=d)
    return Pki(d / "ca.crt", d / "tls.crt", d / "tls.key")


@pytest.fixture(scope="module")
def pkis(tmp_path_factory: pytest.TempPathFactory) -> tuple[Pki, Pki]:
    base = tmp_path_factory.mktemp("pki")
    return make_pki(base / "one", "one"), make_pki(base / "two", "two")


def install(pki: Pki, live: Path) -> tuple[Path, Path]:
    """Copy the pair to `live` the way a Secret volume changes: each file replaced by a rename (new inode)."""
    live.mkdir(exist_ok=True)
    for src, dst in ((pki.cert, live / "tls.crt"), (pki.key, live / "tls.key")):
        tmp = dst.with_suffix(".new")
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    return live / "tls.crt", live / "tls.key"


@pytest.fixture
def server(pkis: tuple[Pki, Pki], tmp_path: Path) -> Iterator[tuple[GateServer, str, Path]]:
    cert, key = install(pkis[0], tmp_path / "live")
    cfg = GateConfig(plan_path=Path("qwen-nextn.yaml"), port=0, token=TOKEN, tls_cert=cert, tls_key=key)
    srv = make_server(cfg, plan={"plan": "stand-in"}, evaluator=Scripted("pass"))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv, f"https://127.0.0.1:{srv.server_address[1]}", tmp_path / "live"
    finally:
        srv.shutdown()
        srv.server_close()


def argo(url: str, ca: Path, token: str | None = TOKEN) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.get(f"{url}/argo", headers=headers, verify=str(ca), timeout=10)


def test_a_verifying_client_gets_the_answer_and_the_token_is_still_required(
        server: tuple[GateServer, str, Path], pkis: tuple[Pki, Pki]) -> None:
    srv, url, _ = server
    assert srv.scheme == "https"
    r = argo(url, pkis[0].ca)
    assert r.status_code == 200 and r.json()["decision"] == "pass"
    assert argo(url, pkis[0].ca, token=None).status_code == 401
    assert argo(url, pkis[0].ca, token="wrong").status_code == 401


def test_a_client_trusting_another_ca_is_refused(server: tuple[GateServer, str, Path], pkis: tuple[Pki, Pki],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    _, url, _ = server
    with caplog.at_level(logging.INFO, logger="gate.webhook"), pytest.raises(requests.exceptions.SSLError) as e:
        argo(url, pkis[1].ca)
    assert "CERTIFICATE_VERIFY_FAILED" in str(e.value)
    assert argo(url, pkis[0].ca).status_code == 200  # the server carries on


def test_plain_http_gets_no_answer(server: tuple[GateServer, str, Path], pkis: tuple[Pki, Pki]) -> None:
    srv, url, _ = server
    with socket.create_connection(("127.0.0.1", srv.server_address[1]), timeout=10) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        try:
            while chunk := s.recv(65536):
                data += chunk
        except ConnectionResetError:
            pass
    assert b"HTTP/1.1 200" not in data and b"ok" not in data  # at most a TLS alert, never the page
    assert argo(url, pkis[0].ca).status_code == 200


def test_a_rotated_pair_is_served_from_the_next_connection(
        server: tuple[GateServer, str, Path], pkis: tuple[Pki, Pki]) -> None:
    srv, url, live = server
    assert argo(url, pkis[0].ca).status_code == 200
    install(pkis[1], live)
    assert argo(url, pkis[1].ca).status_code == 200  # no restart
    with pytest.raises(requests.exceptions.SSLError):
        argo(url, pkis[0].ca)
    assert srv.tls is not None and srv.tls.reloads == 1


def test_a_broken_rotation_keeps_serving_the_previous_pair(
        server: tuple[GateServer, str, Path], pkis: tuple[Pki, Pki], caplog: pytest.LogCaptureFixture) -> None:
    srv, url, live = server
    # half a rotation: the new certificate is there, its key is not yet (the old key stays)
    tmp = live / "tls.crt.new"
    shutil.copyfile(pkis[1].cert, tmp)
    os.replace(tmp, live / "tls.crt")
    with caplog.at_level(logging.WARNING, logger="gate.webhook"):
        assert argo(url, pkis[0].ca).status_code == 200
    assert any("do not load" in r.getMessage() for r in caplog.records)
    assert srv.tls is not None and srv.tls.reloads == 0
    install(pkis[1], live)  # the key arrives: the next connection gets the new pair
    assert argo(url, pkis[1].ca).status_code == 200 and srv.tls.reloads == 1


def encrypt_key(key: Path, out: Path) -> Path:
    """`key` passphrase-protected (PKCS#8, AES-256), as `openssl pkey -aes256` writes it."""
    _openssl("pkey", "-in", str(key), "-out", str(out), "-aes256", "-passout", "pass:not-given-to-specgate",
             cwd=out.parent)
    assert out.read_text().startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    return out


def test_an_encrypted_replacement_key_keeps_the_previous_pair(
        server: tuple[GateServer, str, Path], pkis: tuple[Pki, Pki], caplog: pytest.LogCaptureFixture) -> None:
    """The reload loads with a password callback that refuses: no prompt, one warning, the old pair serves."""
    srv, url, live = server
    encrypted = encrypt_key(pkis[0].key, live / "tls.key.enc")
    os.replace(encrypted, live / "tls.key")  # same key, now encrypted: it would load if a passphrase were asked
    with caplog.at_level(logging.WARNING, logger="gate.webhook"):
        assert argo(url, pkis[0].ca).status_code == 200
        assert requests.get(f"{url}/healthz", verify=str(pkis[0].ca), timeout=10).status_code == 200
    said = [r.getMessage() for r in caplog.records if "encrypted" in r.getMessage()]
    assert said and all("\n" not in m and "PRIVATE KEY" not in m for m in said)
    assert srv.tls is not None and srv.tls.reloads == 0


# ---- the command: bad pairs are one line and exit 3 ------------------------------------------------

def serve_args(cert: Path | None, key: Path | None) -> list[str]:
    args = ["serve", "--plan", str(PLAN), "--listen", "127.0.0.1:0"]
    args += ["--tls-cert", str(cert)] if cert else []
    args += ["--tls-key", str(key)] if key else []
    return args


@pytest.mark.parametrize(("case", "message"), [
    ("mismatch", "is not the private key of --tls-cert"),
    ("missing-key", "not a readable file"),
    ("cert-only", "--tls-cert and --tls-key go together"),
    ("not-pem", "a PEM certificate and its PEM private key expected"),
    ("encrypted", "is encrypted (passphrase-protected); specgate never asks for a passphrase"),
])
def test_a_bad_pair_is_one_line_and_exit_3(case: str, message: str, pkis: tuple[Pki, Pki], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    one, two = pkis
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    cases = {"mismatch": (one.cert, two.key), "missing-key": (one.cert, tmp_path / "absent.key"),
             "cert-only": (one.cert, None), "not-pem": (garbage, one.key)}
    cert, key = cases[case] if case != "encrypted" else (one.cert, encrypt_key(one.key, tmp_path / "enc.key"))
    assert main(serve_args(cert, key)) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("specgate serve: ") and message in err[0], err
    assert "PRIVATE KEY" not in err[0]


def test_the_real_command_serves_https(pkis: tuple[Pki, Pki], tmp_path: Path) -> None:
    """The flags reach the server: `specgate serve` as a process, a verifying client, the token."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "token").write_text(TOKEN + "\n")
    cmd = [str(REPO / ".venv" / "bin" / "specgate"), *serve_args(pkis[0].cert, pkis[0].key),
           "--token-file", str(tmp_path / "token")]
    cmd[cmd.index("127.0.0.1:0")] = f"127.0.0.1:{port}"
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = f"https://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                r: Any = requests.get(f"{url}/healthz", verify=str(pkis[0].ca), timeout=2)
                break
            except requests.exceptions.ConnectionError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.time() < deadline, "specgate serve did not come up"
                time.sleep(0.2)
        assert r.status_code == 200
        assert argo(url, pkis[0].ca, token=None).status_code == 401
        assert argo(url, pkis[0].ca).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert f"listening on https://127.0.0.1:{port}" in (proc.stderr.read() if proc.stderr else "")


def test_an_encrypted_key_under_a_terminal_exits_instead_of_prompting(pkis: tuple[Pki, Pki], tmp_path: Path) -> None:
    """`specgate serve` as a process whose controlling terminal is a pseudo-terminal (where OpenSSL without a
    password callback writes "Enter PEM pass phrase:" and waits for ever): one line and exit 3, no prompt."""
    key = encrypt_key(pkis[0].key, tmp_path / "enc.key")
    master, slave = pty.openpty()

    def controlling_terminal() -> None:  # the child's session (start_new_session) takes the pty as its terminal
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    cmd = [str(REPO / ".venv" / "bin" / "specgate"), *serve_args(pkis[0].cert, key)]
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                            preexec_fn=controlling_terminal)
    os.close(slave)
    out = b""
    try:
        deadline = time.monotonic() + 30  # a prompt never ends; the refusal takes well under a second
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
                if b"pass phrase" in out.lower():  # the old behaviour: prompting, every endpoint blocked
                    break
            elif proc.poll() is not None:
                break
        try:
            rc: int | None = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            rc = None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = out.decode(errors="replace")
    assert "pass phrase" not in text.lower(), text
    assert rc == 3, text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1 and "is encrypted (passphrase-protected)" in lines[0], text
