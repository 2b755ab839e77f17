"""HTTP gate for Argo Rollouts (web metric) and Flagger (webhook).

Endpoints:
  GET|POST /argo     always 200; JSON {"decision", "phase", "checks": {line: {"status", "reason"}}}
                     (successCondition: result.decision == "pass"); ?phase=pre|post, ?deployment=NAME
  POST /flagger      Flagger's webhook payload; 200 allows, 403 blocks with the reasons in the body;
                     metadata.phase picks the phase, metadata.token carries the token
  GET /healthz       liveness
  GET /metrics       specgate_gate_decisions_total{decision}, specgate_gate_line_status{line,status}

The default phase is `post` (the live per-window SLO from Prometheus history or the exporter's window
counters); an evaluation that does not finish within --timeout answers `inconclusive`.
The token comes from --token-file or $SPECGATE_GATE_TOKEN (surrounding whitespace stripped; set but empty is
an error, never an open gate); without either, no token is asked for.
Listens on 127.0.0.1 unless told otherwise. With --tls-cert and --tls-key (PEM files, both or neither) it
speaks HTTPS only, and reloads the pair when either file changes (checked at each new connection), so a
rotated Secret is served without a restart; a pair that cannot be loaded at start is one line and exit 3.
"""

from __future__ import annotations

import argparse
import logging
import os
import ssl
import sys
from pathlib import Path

from gate.commands._args import invalid, parse_listen
from gate.inputs.loading import read_secret
from gate.status import EXIT_PASS, InputError

# The services log through logging.getLogger(__name__); the command sends it to stderr as before.
LOG_FORMAT = "specgate serve: %(message)s"
PREFIX = "specgate serve: "


def _log_to_stderr() -> None:
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plan", required=True, type=Path, help="rollout plan (YAML)")
    parser.add_argument("--listen", default="127.0.0.1:9401", type=parse_listen,
                        help="HOST:PORT to listen on (default 127.0.0.1:9401)")
    parser.add_argument("--prometheus", help="Prometheus URL for post-phase evidence (overrides the plan's)")
    parser.add_argument("--metrics", action="append", default=[], metavar="URL",
                        help="exporter /metrics URL for evidence (repeatable)")
    parser.add_argument("--token-file", type=Path, help="file holding the bearer token (else $SPECGATE_GATE_TOKEN)")
    parser.add_argument("--timeout", type=float, default=8.0, metavar="S",
                        help="seconds an evaluation may take before the answer is inconclusive (default 8)")
    parser.add_argument("--phase", choices=("pre", "post"), default="post",
                        help="phase when the request names none (default post)")
    parser.add_argument("--tls-cert", type=Path, metavar="FILE",
                        help="PEM certificate (chain) to serve HTTPS with; needs --tls-key; reloaded when it changes")
    parser.add_argument("--tls-key", type=Path, metavar="FILE", help="PEM private key of --tls-cert")


def check_tls(cert: Path, key: Path) -> None:
    """Load the pair once before listening, so a bad one is one line naming the file (InputError), never a
    traceback and never the key's content. OpenSSL says "PEM lib" for anything it cannot parse."""
    from gate.webhook import EncryptedKey, load_tls_context

    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        if not path.is_file():
            raise InputError(f"{flag} {path}: not a readable file")
    try:
        load_tls_context(cert, key)
    except EncryptedKey:
        raise InputError(f"--tls-key {key} is encrypted (passphrase-protected); specgate never asks for a "
                         "passphrase: give it the unencrypted PEM key (as a Kubernetes TLS Secret holds it)") \
            from None
    except ssl.SSLError as e:
        if e.reason == "KEY_VALUES_MISMATCH":
            raise InputError(f"--tls-key {key} is not the private key of --tls-cert {cert}") from None
        raise InputError(f"cannot load --tls-cert {cert} / --tls-key {key}: {e.reason or 'not PEM'} "
                         "(a PEM certificate and its PEM private key expected)") from None
    except OSError as e:
        raise InputError(f"cannot read --tls-cert {cert} / --tls-key {key}: {e.strerror or e}") from None


def read_token(path: Path | None) -> str | None:
    """The bearer token from `--token-file` (read by `gate.inputs.loading.read_secret`: a regular file of at most
    64 KiB, never waited on; errors name the file, never its content), else `$SPECGATE_GATE_TOKEN`, else None.
    Empty is an error either way (InputError): never an open gate by accident."""
    if path is not None:
        token = read_secret(path, "token file").strip()
        if not token:
            raise InputError(f"token file {path} is empty")
        return token
    env = os.environ.get("SPECGATE_GATE_TOKEN")
    if env is None:
        return None
    if not env.strip():  # set from a Secret whose key is empty: refuse rather than serve without a token
        raise InputError("SPECGATE_GATE_TOKEN is set but empty")
    return env.strip()


def run(args: argparse.Namespace) -> int:
    _log_to_stderr()
    from gate.plan.model import load_plan
    from gate.webhook import GateConfig, make_server

    try:
        token = read_token(args.token_file)
    except InputError as e:
        return invalid(str(e), PREFIX)
    if args.timeout <= 0:
        return invalid("--timeout must be positive", PREFIX)
    try:
        plan = load_plan(args.plan)
    except InputError as e:  # the plan loader's errors are one-line messages naming the path
        return invalid(f"invalid plan {args.plan}: {e}", PREFIX)
    if (args.tls_cert is None) != (args.tls_key is None):
        return invalid("--tls-cert and --tls-key go together", PREFIX)
    host, port = args.listen
    config = GateConfig(plan_path=args.plan, host=host, port=port, prometheus=args.prometheus,
                        metrics=tuple(args.metrics), token=token, timeout_s=args.timeout,
                        default_phase=args.phase, tls_cert=args.tls_cert, tls_key=args.tls_key)
    if config.tls_cert and config.tls_key:
        try:
            check_tls(config.tls_cert, config.tls_key)
        except InputError as e:
            return invalid(str(e), PREFIX)
    try:
        server = make_server(config, plan)
    except OSError as e:
        return invalid(f"cannot listen on {host}:{port}: {e.strerror or e}", PREFIX)
    print(f"specgate serve: listening on {server.scheme}://{host}:{server.server_address[1]} "
          f"(plan {args.plan}, token {'required' if token else 'not required'})", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return EXIT_PASS
