"""The HTTP gate: Argo Rollouts web metric, Flagger webhook, health and metrics on one small server.

Why a separate server rather than a CLI in a Job: progressive-delivery tools ask during a canary, many
times, and need an answer within their own timeout. Each request evaluates the plan (default phase
`post`: the live per-window SLO, answered from Prometheus history or the exporter's window counters —
nothing waits for a new window) in a worker thread; if that does not finish within `timeout_s` the
answer is `inconclusive`, never a guess.

Contracts (design.md "HTTP and Kubernetes contracts"):
- `GET|POST /argo`: always 200 with `{"decision", "phase", "checks": {line: {"status", "reason"}}}`, so
  `successCondition: result.decision == "pass"` works (Argo counts non-2xx as an error, not a failure).
- `POST /flagger`: Flagger's payload `{"name", "namespace", "phase", "checksum", "metadata": {...}}`;
  200 allows, 403 blocks with the reasons in the body (Flagger logs it into the canary's events).
- A token, when configured: `Authorization: Bearer …`, or for Flagger (which cannot set headers)
  `metadata.token`; compared in constant time; 401 without it. `/healthz` and `/metrics` are open.
- Bodies over `max_body_bytes` are refused with 413 before they are read.
- TLS (`--tls-cert`, `--tls-key`): `TlsFiles` holds the SSL context; before each accepted connection it
  stats both files and, when either changed (mtime, size or inode: a Kubernetes Secret volume swaps a
  symlink), loads the pair into a new context, so a rotated certificate (cert-manager) is served from the
  next connection on without a restart. A pair that does not load (half-written, key and certificate that do
  not match, a passphrase-protected key: OpenSSL is given a password callback that refuses, so it never
  prompts on a terminal) is logged and the previous context keeps serving; it is tried again on the next
  connection. The
  handshake runs in the connection's worker thread under the handler's timeout, so a client that stalls
  it holds one thread, never the accept loop. The bearer token is still required over TLS.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import socket
import ssl
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST
from pydantic import BaseModel, ConfigDict, ValidationError

from gate.inputs.jsontext import dumps
from gate.status import InputError
from gate.verdict.answer import GateAnswer, answer_of
from gate.verdict.gate_metrics import GateMetrics

if TYPE_CHECKING:  # pragma: no cover - the evaluator is imported when the first Gate is built
    from gate.verdict.evaluate import Evaluator

log = logging.getLogger(__name__)
_QUERY = re.compile(r"(\S)\?[^\s\"]*")  # the query string of a request target in a log line

PHASES = ("pre", "post")


@dataclass(frozen=True)
class GateConfig:
    """How `specgate serve` answers; plain data, built by the command from its flags."""

    plan_path: Path
    host: str = "127.0.0.1"
    port: int = 9401
    prometheus: str | None = None
    metrics: tuple[str, ...] = ()
    token: str | None = field(default=None, repr=False)
    timeout_s: float = 8.0  # below Argo's default web-metric timeout (10 s)
    default_phase: str = "post"
    max_body_bytes: int = 64 * 1024
    workers: int = 4
    tls_cert: Path | None = None  # both or neither (the command checks)
    tls_key: Path | None = None


def _stamp(path: Path) -> tuple[int, int, int]:
    """(mtime, size, inode) of a regular file; OSError otherwise (a FIFO would block the accept loop)."""
    st = os.stat(path)  # follows symlinks: a Secret volume's ..data swap changes the target's inode
    if not stat.S_ISREG(st.st_mode):
        raise OSError(f"{path} is not a regular file")
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class EncryptedKey(ssl.SSLError):
    """The key file is passphrase-protected. specgate is never given a passphrase: without a password callback
    OpenSSL would prompt for one on the process's terminal and block the accept loop (every endpoint,
    `/healthz` included), so `load_tls_context` hands it one that refuses."""

    reason = "ENCRYPTED_KEY"


def _no_passphrase() -> bytes:
    """The password callback of every key load: an encrypted key is refused, never asked about."""
    raise EncryptedKey("the private key is encrypted (passphrase-protected); an unencrypted PEM key is expected")


def load_tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server context for the PEM pair; OSError (missing, unreadable) or ssl.SSLError (not PEM, key and
    certificate do not match, EncryptedKey) propagate for the caller to word."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(certfile=str(cert), keyfile=str(key), password=_no_passphrase)
    return ctx


class TlsFiles:
    """The certificate/key pair and the context built from it, reloaded when either file changes."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.cert = cert
        self.key = key
        self._lock = threading.Lock()
        self._stamps = (_stamp(cert), _stamp(key))
        self._context = load_tls_context(cert, key)
        self.reloads = 0  # successful reloads since start (tests and logs read it)

    def context(self) -> ssl.SSLContext:
        """The context to wrap the next connection with: a new one when the files changed and load."""
        with self._lock:
            try:
                stamps = (_stamp(self.cert), _stamp(self.key))
            except OSError as e:
                log.warning("TLS files unreadable (%s); serving the certificate loaded before", e.strerror or e)
                return self._context
            if stamps != self._stamps:
                try:
                    self._context = load_tls_context(self.cert, self.key)
                except EncryptedKey:
                    log.warning("TLS key %s changed but is encrypted (passphrase-protected, never prompted for); "
                                "serving the certificate loaded before", self.key)
                    return self._context  # stamps not stored: tried again on the next connection
                except (OSError, ssl.SSLError) as e:
                    log.warning("TLS files changed but do not load (%s); serving the certificate loaded before",
                                getattr(e, "reason", None) or e)
                    return self._context  # stamps not stored: tried again on the next connection
                self._stamps = stamps
                self.reloads += 1
                log.info("TLS certificate reloaded from %s (reload %d since start)", self.cert, self.reloads)
            return self._context


class FlaggerPayload(BaseModel):
    """Flagger's webhook body (CanaryWebhookPayload); unknown keys are tolerated for newer Flaggers."""

    model_config = ConfigDict(extra="allow")

    name: str
    namespace: str
    phase: str | None = None
    checksum: str | None = None
    metadata: dict[str, str] | None = None


class ArgoRequest(BaseModel):
    """Optional JSON body of an Argo web metric `POST` (`provider.web.body`)."""

    model_config = ConfigDict(extra="forbid")

    phase: str | None = None
    deployment: str | None = None


def token_matches(given: str | None, expected: str) -> bool:
    """Constant-time comparison, so response timing says nothing about how much of a guess was right."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def bearer(header: str | None) -> str | None:
    if header and header[:7].lower() == "bearer ":
        return header[7:].strip()
    return None


class Gate:
    """The gate behind the HTTP endpoints: evaluation with a deadline, the token, and the metrics."""

    def __init__(self, config: GateConfig, plan: Any, evaluator: Evaluator | None = None,
                 metrics: GateMetrics | None = None) -> None:
        self.config = config
        self.plan = plan
        if evaluator is None:
            from gate.verdict.evaluate import service_evaluator

            evaluator = service_evaluator()
        self.evaluator = evaluator
        self.metrics = metrics or GateMetrics()
        self._pool = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="specgate-eval")
        self.default_deployment = config.plan_path.stem

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def authorized(self, *candidates: str | None) -> bool:
        if not self.config.token:
            return True
        # Compare every candidate (no short-circuit on the first), each in constant time.
        results = [token_matches(c, self.config.token) for c in candidates]
        return any(results)

    def decide(self, phase: str, deployment: str | None = None) -> GateAnswer:
        """Evaluate within the deadline; a late or failed evaluation is inconclusive, never a pass."""
        fut = self._pool.submit(self.evaluator, self.plan, phase=phase, metrics=self.config.metrics,
                                prometheus=self.config.prometheus)
        try:
            answer = answer_of(fut.result(timeout=self.config.timeout_s), phase)
        except FutureTimeout:
            fut.cancel()
            answer = GateAnswer.failed(
                phase, f"evaluation did not finish within {self.config.timeout_s:g} s; no answer is not a pass")
        except Exception as e:  # the evaluator's failure is reported as an answer, not a 500
            log.warning("evaluation failed: %s: %s", type(e).__name__, e)
            answer = GateAnswer.failed(phase, f"evaluation failed: {type(e).__name__}: {e}")
        answer = answer.for_deployment(deployment or self.default_deployment)
        self.metrics.record_answer(answer.deployment or self.default_deployment, answer)
        return answer


class GateServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer that carries its Gate (no globals)."""

    daemon_threads = True

    def __init__(self, gate: Gate, tls: TlsFiles | None = None) -> None:
        self.gate = gate
        self.tls = tls
        super().__init__((gate.config.host, gate.config.port), GateHandler)

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def get_request(self) -> tuple[socket.socket, Any]:
        """Accept; with TLS, wrap in the current context (the handshake waits for the worker thread)."""
        sock, addr = super().get_request()
        if self.tls is None:
            return sock, addr
        try:
            return self.tls.context().wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr
        except (OSError, ssl.SSLError):
            sock.close()
            raise

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(GateHandler.timeout)
            try:
                request.do_handshake()
            except (OSError, ssl.SSLError) as e:  # a client that refuses our certificate, plain HTTP, a stall
                log.info("%s TLS handshake failed: %s", client_address[0], getattr(e, "reason", None) or e)
                return
        super().finish_request(request, client_address)

    def server_close(self) -> None:
        super().server_close()
        self.gate.close()


class HttpError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class GateHandler(BaseHTTPRequestHandler):
    server: GateServer
    protocol_version = "HTTP/1.1"
    timeout = 30  # a client that stops sending mid-request is dropped
    server_version = "specgate"
    sys_version = ""
    _body_read = False  # per request, set by _route/_body

    def log_message(self, format: str, *args: Any) -> None:
        # Request lines only, their query strings redacted: a caller may put a token there (`?token=`),
        # which is never accepted and never written to a log; tokens live in headers and bodies.
        log.info("%s %s", self.address_string(), _QUERY.sub(r"\1?<redacted>", format % args))

    # ---- responses ----
    def _send(self, code: int, body: dict[str, Any] | bytes, content_type: str = "application/json") -> None:
        if not isinstance(body, bytes):
            try:  # the CLI's one encoder: never `NaN`/`Infinity`, which no JSON reader (Argo, Flagger) takes
                data = dumps(body, "answer", indent=None).encode("utf-8")
            except InputError as e:  # a non-finite number: an error, never a pass (Argo: error; Flagger: blocks)
                log.warning("%s", e)
                code, data = 500, dumps({"error": str(e)}, "error", indent=None).encode("utf-8")
        else:
            data = body
        if not self._body_read and (self.headers.get("Content-Length") not in (None, "", "0")
                                    or self.headers.get("Transfer-Encoding")):
            # A body left unread would be parsed as the next request on this keep-alive connection.
            self.close_connection = True
        self.send_response(code)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if code == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="specgate"')
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, e: HttpError) -> None:
        self._send(e.code, {"error": e.message})

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            raise HttpError(411, "a Content-Length is required")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            raise HttpError(400, "bad Content-Length") from None
        if length > self.server.gate.config.max_body_bytes:
            self.close_connection = True  # the body stays unread
            raise HttpError(413, f"request body over {self.server.gate.config.max_body_bytes} bytes")
        self._body_read = True
        return self.rfile.read(length) if length > 0 else b""

    # ---- routing ----
    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def _route(self, method: str) -> None:
        self._body_read = False
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        try:
            if url.path == "/healthz" and method == "GET":
                self._send(200, {"status": "ok"})
            elif url.path == "/metrics" and method == "GET":
                self._send(200, self.server.gate.metrics.exposition(), CONTENT_TYPE_LATEST)
            elif url.path == "/argo":
                self._argo(method, query)
            elif url.path == "/flagger":
                if method != "POST":
                    raise HttpError(405, "Flagger webhooks are POST")
                self._flagger(query)
            else:
                raise HttpError(404, "not found; endpoints: /argo, /flagger, /healthz, /metrics")
        except HttpError as e:
            self._error(e)

    def _phase(self, *candidates: str | None) -> str:
        phase = next((c for c in candidates if c), self.server.gate.config.default_phase)
        if phase not in PHASES:
            raise HttpError(400, f"phase must be one of {'|'.join(PHASES)}, got {phase!r}")
        return phase

    def _argo(self, method: str, query: dict[str, str]) -> None:
        raw = self._body()
        gate = self.server.gate
        if not gate.authorized(bearer(self.headers.get("Authorization"))):
            raise HttpError(401, "missing or wrong bearer token")
        req = ArgoRequest()
        if raw.strip():
            try:
                req = ArgoRequest.model_validate_json(raw)
            except ValidationError as e:
                raise HttpError(400, f"bad request body: {e.errors()[0]['msg']} at "
                                     f"{'.'.join(str(p) for p in e.errors()[0]['loc']) or 'body'}") from None
        phase = self._phase(query.get("phase"), req.phase)
        self._send(200, gate.decide(phase, query.get("deployment") or req.deployment).to_json())

    def _flagger(self, query: dict[str, str]) -> None:
        raw = self._body()
        gate = self.server.gate
        try:
            payload = FlaggerPayload.model_validate_json(raw or b"null")
        except ValidationError as e:
            # Authorize before saying anything about the body.
            if not gate.authorized(bearer(self.headers.get("Authorization"))):
                raise HttpError(401, "missing or wrong token (Authorization: Bearer, or metadata.token)") from None
            err = e.errors()[0]
            raise HttpError(400, f"bad Flagger payload: {err['msg']} at "
                                 f"{'.'.join(str(p) for p in err['loc']) or 'body'}") from None
        meta = payload.metadata or {}
        if not gate.authorized(bearer(self.headers.get("Authorization")), meta.get("token")):
            raise HttpError(401, "missing or wrong token (Authorization: Bearer, or metadata.token)")
        phase = self._phase(query.get("phase"), meta.get("phase"))
        answer = gate.decide(phase, payload.name)
        body = answer.to_json()
        body["canary"] = {"name": payload.name, "namespace": payload.namespace, "phase": payload.phase}
        if answer.passed:
            self._send(200, body)
        else:
            body["reasons"] = answer.reasons()
            self._send(403, body)


def make_server(config: GateConfig, plan: Any, evaluator: Evaluator | None = None) -> GateServer:
    """Bind (port 0 picks a free one) without serving yet; `serve_forever()` runs it. With `tls_cert` and
    `tls_key` the pair is loaded first (OSError / ssl.SSLError propagate: the command words them)."""
    tls = TlsFiles(config.tls_cert, config.tls_key) if config.tls_cert and config.tls_key else None
    return GateServer(Gate(config, plan, evaluator), tls)
