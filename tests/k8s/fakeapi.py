"""A loopback fake of the Kubernetes API server, for tests that drive the real `kubernetes` client.

No API server can run on these machines (docs/development.md, "What real means here"), so the controller and the
Kubernetes evidence are tested against this: real HTTP on 127.0.0.1, the URL layout, object metadata
(`resourceVersion`, `uid`, `creationTimestamp`, `generation`), `Status` error bodies, list and watch
semantics (chunked JSON lines; an `ERROR` event with code 410 when the requested resourceVersion is older
than the compacted history), strategic-merge / merge patches, optimistic concurrency (409 when a write
names a stale `resourceVersion`), and injectable faults (500s) and hooks (a concurrent writer).

Only what specgate uses is served: Deployments (apps/v1), Pods and Events (v1), Leases (coordination.k8s.io/v1).
"""

from __future__ import annotations

import copy
import json
import re
import secrets
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

# (path prefix, plural) -> (apiVersion, kind, group for Status details)
RESOURCES: dict[tuple[str, str], tuple[str, str, str]] = {
    ("api/v1", "pods"): ("v1", "Pod", ""),
    ("api/v1", "events"): ("v1", "Event", ""),
    ("apis/apps/v1", "deployments"): ("apps/v1", "Deployment", "apps"),
    ("apis/coordination.k8s.io/v1", "leases"): ("coordination.k8s.io/v1", "Lease", "coordination.k8s.io"),
}
PLURAL_OF_KIND = {kind: plural for (_, plural), (_, kind, _) in RESOURCES.items()}
PATH_RE = re.compile(r"^/(api/v1|apis/[^/]+/[^/]+)/namespaces/([^/]+)/([^/]+)(?:/([^/]+))?$")
# Strategic-merge list keys (from the Kubernetes API's x-kubernetes-patch-merge-key), for what we touch.
MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
              "volumeMounts": "mountPath", "ports": "containerPort", "conditions": "type"}


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A metav1.Status, the body every API error carries."""
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                            "message": message, "reason": reason, "code": code}
    if details:
        body["details"] = details
    return body


def strategic_merge(orig: Any, patch: Any) -> Any:
    """Apply a strategic-merge patch: maps merge, `null` deletes, lists with a merge key merge by it."""
    if not isinstance(patch, dict) or not isinstance(orig, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(orig)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, list) and key in MERGE_KEYS and all(isinstance(v, dict) for v in value):
            mk = MERGE_KEYS[key]
            merged = [copy.deepcopy(v) for v in out.get(key) or []]
            for item in value:
                idx = next((i for i, cur in enumerate(merged) if cur.get(mk) == item.get(mk)), None)
                if item.get("$patch") == "delete":
                    if idx is not None:
                        merged.pop(idx)
                elif idx is None:
                    merged.append(copy.deepcopy(item))
                else:
                    merged[idx] = strategic_merge(merged[idx], item)
            out[key] = merged
        elif isinstance(value, dict):
            out[key] = strategic_merge(out.get(key) if isinstance(out.get(key), dict) else {}, value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def merge_patch(orig: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: maps merge, `null` deletes, lists are replaced."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(orig) if isinstance(orig, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def matches_labels(obj: dict[str, Any], selector: str | None) -> bool:
    """Equality-based label selectors (`a=b,c!=d,e`), which is all the controller uses."""
    if not selector:
        return True
    labels = obj.get("metadata", {}).get("labels") or {}
    for term in selector.split(","):
        term = term.strip()
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        elif "=" in term:
            k, v = term.split("=", 1)
            if labels.get(k.rstrip("=")) != v.lstrip("="):
                return False
        elif term and term not in labels:
            return False
    return True


def matches_fields(obj: dict[str, Any], selector: str | None) -> bool:
    if not selector:
        return True
    for term in selector.split(","):
        k, _, v = term.partition("=")
        if k == "metadata.name" and obj["metadata"]["name"] != v:
            return False
        if k == "metadata.namespace" and obj["metadata"].get("namespace") != v:
            return False
    return True


@dataclass
class Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    times: int
    headers: dict[str, str] = field(default_factory=dict)  # e.g. Retry-After on a 429/503


@dataclass
class Hook:
    method: str
    pattern: re.Pattern[str]
    fn: Callable[[FakeKube], None]
    times: int
    when: Callable[[dict[str, str]], bool] | None = None


@dataclass
class Logged:
    method: str
    path: str
    query: dict[str, str]
    status: int
    content_type: str | None = None
    body: Any = None


@dataclass
class FakeKube:
    """The fake API server's state and its HTTP front. `start()` returns the base URL."""

    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)  # (plural, ns, name)
    history: list[tuple[int, str, str, dict[str, Any]]] = field(default_factory=list)  # (rv, type, plural, obj)
    requests: list[Logged] = field(default_factory=list)
    rv: int = 100
    compacted_rv: int = 0
    faults: list[Fault] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cond = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False

    # ---- lifecycle -------------------------------------------------------------------------------------
    def start(self) -> str:
        fake = self

        class Handler(_Handler):
            kube = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        with self.cond:
            self._stopping = True
            self.cond.notify_all()
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    # ---- test controls ---------------------------------------------------------------------------------
    def fail(self, method: str, path_regex: str, status: int = 500, times: int = 1,
             headers: dict[str, str] | None = None) -> None:
        """The next `times` requests matching method and path answer `status` with a Status body (and
        `headers`, e.g. the Retry-After an API server's priority-and-fairness 429 carries)."""
        with self.cond:
            self.faults.append(Fault(method, re.compile(path_regex), status, times, dict(headers or {})))

    def before(self, method: str, path_regex: str, fn: Callable[[FakeKube], None], times: int = 1,
               when: Callable[[dict[str, str]], bool] | None = None) -> None:
        """Run `fn(fake)` before handling the next `times` matching requests (e.g. a concurrent writer);
        `when(query)` narrows the match (e.g. only watch requests)."""
        with self.cond:
            self.hooks.append(Hook(method, re.compile(path_regex), fn, times, when))

    def compact(self) -> None:
        """Forget the event history, as etcd compaction does: older watches now get 410 Gone."""
        with self.cond:
            self.compacted_rv = self.rv
            self.history.clear()

    def seed(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create an object directly (as another client would) and return the stored copy."""
        plural = PLURAL_OF_KIND[obj["kind"]]
        with self.cond:
            return copy.deepcopy(self._create(plural, obj["metadata"]["namespace"], obj))

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.cond:
            obj = self.objects.get((PLURAL_OF_KIND[kind], namespace, name))
            return copy.deepcopy(obj) if obj else None

    def list(self, kind: str, namespace: str) -> list[dict[str, Any]]:
        plural = PLURAL_OF_KIND[kind]
        with self.cond:
            return [copy.deepcopy(o) for (p, ns, _), o in sorted(self.objects.items()) if p == plural and ns == namespace]

    def update(self, kind: str, namespace: str, name: str, fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Mutate a stored object as another writer would (bumps resourceVersion, emits MODIFIED)."""
        plural = PLURAL_OF_KIND[kind]
        with self.cond:
            obj = copy.deepcopy(self.objects[(plural, namespace, name)])
            fn(obj)
            return copy.deepcopy(self._store(plural, obj, "MODIFIED", old=self.objects[(plural, namespace, name)]))

    def count(self, method: str, path_regex: str, status: int | None = None) -> int:
        pat = re.compile(path_regex)
        return sum(1 for r in self.requests if r.method == method and pat.search(r.path)
                   and (status is None or r.status == status))

    # ---- store -----------------------------------------------------------------------------------------
    def _store(self, plural: str, obj: dict[str, Any], kind: str, old: dict[str, Any] | None) -> dict[str, Any]:
        self.rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.rv)
        if plural == "deployments" and old is not None and old.get("spec") != obj.get("spec"):
            meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        key = (plural, meta["namespace"], meta["name"])
        self.objects[key] = obj
        self.history.append((self.rv, kind, plural, copy.deepcopy(obj)))
        self.cond.notify_all()
        return obj

    def _create(self, plural: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        obj = copy.deepcopy(body)
        api_version, kind, _ = next(v for (_, p), v in RESOURCES.items() if p == plural)
        obj["apiVersion"], obj["kind"] = api_version, kind
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + secrets.token_hex(3)[:5]
        meta["namespace"] = namespace
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if plural == "deployments":
            meta["generation"] = 1
        return self._store(plural, obj, "ADDED", old=None)


class _Handler(BaseHTTPRequestHandler):
    kube: FakeKube
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # ---- plumbing --------------------------------------------------------------------------------------
    def _send(self, code: int, body: dict[str, Any], log: Logged, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        log.status = code
        self.send_response(code)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self, method: str) -> None:
        kube = self.kube
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        log = Logged(method, url.path, query, 0, self.headers.get("Content-Type"), body)
        with kube.cond:
            kube.requests.append(log)
            hook = next((h for h in kube.hooks if h.method == method and h.pattern.search(url.path)
                         and (h.when is None or h.when(query))), None)
            if hook:
                hook.times -= 1
                if hook.times <= 0:
                    kube.hooks.remove(hook)
            fault = next((f for f in kube.faults if f.method == method and f.pattern.search(url.path)), None)
            if fault:
                fault.times -= 1
                if fault.times <= 0:
                    kube.faults.remove(fault)
        if hook:
            hook.fn(kube)
        if fault:
            reason = {500: "InternalError", 503: "ServiceUnavailable", 429: "TooManyRequests"}.get(fault.status, "Unknown")
            return self._send(fault.status, status_body(fault.status, reason, "injected fault"), log, fault.headers)
        m = PATH_RE.match(url.path)
        if not m or (m.group(1), m.group(3)) not in RESOURCES:
            return self._send(404, status_body(404, "NotFound", "the server could not find the requested resource"), log)
        prefix, namespace, plural, name = m.groups()
        if method == "GET" and name is None and query.get("watch", "").lower() in ("true", "1"):
            return self._watch(plural, namespace, query, log)
        with kube.cond:
            code, out = self._handle(method, plural, namespace, name, query, body, self.headers.get("Content-Type", ""))
        self._send(code, out, log)

    def _not_found(self, plural: str, name: str) -> tuple[int, dict[str, Any]]:
        group = next(g for (_, p), (_, _, g) in RESOURCES.items() if p == plural)
        qual = f"{plural}.{group}" if group else plural
        return 404, status_body(404, "NotFound", f'{qual} "{name}" not found',
                                {"name": name, "group": group, "kind": plural})

    def _conflict(self, plural: str, name: str) -> tuple[int, dict[str, Any]]:
        group = next(g for (_, p), (_, _, g) in RESOURCES.items() if p == plural)
        qual = f"{plural}.{group}" if group else plural
        return 409, status_body(409, "Conflict", f'Operation cannot be fulfilled on {qual} "{name}": the object has '
                                "been modified; please apply your changes to the latest version and try again",
                                {"name": name, "group": group, "kind": plural})

    def _handle(self, method: str, plural: str, namespace: str, name: str | None, query: dict[str, str],
                body: Any, content_type: str) -> tuple[int, dict[str, Any]]:
        kube = self.kube
        api_version, kind, _ = next(v for (_, p), v in RESOURCES.items() if p == plural)
        if name is None and method == "GET":
            items = []
            for (p, ns, _), obj in sorted(kube.objects.items()):
                if p == plural and ns == namespace and matches_labels(obj, query.get("labelSelector")) \
                        and matches_fields(obj, query.get("fieldSelector")):
                    item = copy.deepcopy(obj)
                    item.pop("apiVersion", None)  # list items carry no TypeMeta on the wire
                    item.pop("kind", None)
                    items.append(item)
            return 200, {"apiVersion": api_version, "kind": f"{kind}List",
                         "metadata": {"resourceVersion": str(kube.rv)}, "items": items}
        if name is None and method == "POST":
            if not isinstance(body, dict):
                return 400, status_body(400, "BadRequest", "body must be an object")
            new_name = (body.get("metadata") or {}).get("name")
            if new_name and (plural, namespace, new_name) in kube.objects:
                return 409, status_body(409, "AlreadyExists", f'{plural} "{new_name}" already exists',
                                        {"name": new_name, "kind": plural})
            return 201, copy.deepcopy(kube._create(plural, namespace, body))
        if name is None:
            return 405, status_body(405, "MethodNotAllowed", "method not allowed")
        current = kube.objects.get((plural, namespace, name))
        if current is None:
            return self._not_found(plural, name)
        if method == "GET":
            return 200, copy.deepcopy(current)
        if method in ("PUT", "PATCH"):
            want_rv = ((body or {}).get("metadata") or {}).get("resourceVersion")
            if want_rv is not None and want_rv != current["metadata"]["resourceVersion"]:
                return self._conflict(plural, name)
            if method == "PUT":
                new = copy.deepcopy(body)
            elif content_type.startswith("application/strategic-merge-patch+json"):
                new = strategic_merge(current, body)
            elif content_type.startswith("application/merge-patch+json"):
                new = merge_patch(current, body)
            else:
                return 415, status_body(415, "UnsupportedMediaType", f"the fake does not serve {content_type}")
            for keep in ("uid", "creationTimestamp", "name", "namespace", "generation"):
                if keep in current["metadata"]:
                    new.setdefault("metadata", {})[keep] = current["metadata"][keep]
            new["apiVersion"], new["kind"] = api_version, kind
            return 200, copy.deepcopy(kube._store(plural, new, "MODIFIED", old=current))
        if method == "DELETE":
            del kube.objects[(plural, namespace, name)]
            kube.rv += 1
            kube.history.append((kube.rv, "DELETED", plural, copy.deepcopy(current)))
            kube.cond.notify_all()
            return 200, copy.deepcopy(current)
        return 405, status_body(405, "MethodNotAllowed", "method not allowed")

    def _chunk(self, event: dict[str, Any]) -> None:
        data = (json.dumps(event) + "\n").encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _watch(self, plural: str, namespace: str, query: dict[str, str], log: Logged) -> None:
        """Chunked watch stream: events after `resourceVersion`, or 410 Gone in an ERROR event."""
        kube = self.kube
        log.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        timeout = float(query.get("timeoutSeconds") or 5)
        label_sel, field_sel = query.get("labelSelector"), query.get("fieldSelector")
        start = query.get("resourceVersion") or "0"
        with kube.cond:
            if start == "0":
                initial = [("ADDED", copy.deepcopy(o)) for (p, ns, _), o in sorted(kube.objects.items())
                           if p == plural and ns == namespace]
                since = kube.rv
            elif int(start) < kube.compacted_rv:
                initial = None
                since = kube.rv
            else:
                initial = []
                since = int(start)
        try:
            if initial is None:
                self._chunk({"type": "ERROR", "object": status_body(
                    410, "Expired", f"too old resource version: {start} ({kube.compacted_rv})")})
            else:
                for etype, obj in initial:
                    if matches_labels(obj, label_sel) and matches_fields(obj, field_sel):
                        self._chunk({"type": etype, "object": obj})
                deadline = threading.Event()
                timer = threading.Timer(timeout, lambda: (deadline.set(), _notify(kube)))
                timer.daemon = True
                timer.start()
                while not deadline.is_set():
                    with kube.cond:
                        if kube._stopping:
                            break
                        if since < kube.compacted_rv:
                            pending: list[tuple[int, str, str, dict[str, Any]]] | None = None
                        else:
                            pending = [h for h in kube.history if h[0] > since and h[2] == plural
                                       and h[3]["metadata"].get("namespace") == namespace]
                            if not pending:
                                kube.cond.wait(0.5)
                                continue
                    if pending is None:
                        self._chunk({"type": "ERROR", "object": status_body(
                            410, "Expired", f"too old resource version: {since} ({kube.compacted_rv})")})
                        break
                    for rv, etype, _, obj in pending:
                        since = rv
                        if matches_labels(obj, label_sel) and matches_fields(obj, field_sel):
                            self._chunk({"type": etype, "object": obj})
                timer.cancel()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


def _notify(kube: FakeKube) -> None:
    with kube.cond:
        kube.cond.notify_all()
