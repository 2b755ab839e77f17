"""Kubernetes controller: flip the drafter on only after the gate passes.

Watches Deployments labelled specgate.io/gate: "true" in one namespace. When the annotation
specgate.io/drafter-request names a drafter plan different from what runs (specgate.io/drafter-active),
the plan is judged --phase pre; on pass one PATCH adds the engine container's speculative flags and
records the decision (specgate.io/last-decision) and an Event; on fail or inconclusive nothing else
changes and the annotation and a Warning Event say why. While the drafter runs, each resync judges
--phase post and turns the drafter off again, with an Event, when the acceptance SLO fails. A refused
request is judged again only when the request or the plan changes, or after --backoff.

--plan FILE: every request uses this plan. --plan DIR: a request NAME uses DIR/NAME.yaml.
Leader election: a coordination.k8s.io/v1 Lease (--lease-name); only the holder acts.
Cluster access: the in-cluster service account, else the local kubeconfig.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
from pathlib import Path

from gate.commands._args import invalid, parse_listen
from gate.status import EXIT_PASS, InputError

# The services log through logging.getLogger(__name__); the command sends it to stderr as before.
LOG_FORMAT = "specgate controller: %(message)s"
PREFIX = "specgate controller: "


def _log_to_stderr() -> None:
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plan", required=True, type=Path, help="rollout plan file, or a directory of plans")
    parser.add_argument("--namespace", required=True, help="namespace to watch")
    parser.add_argument("--deployment", help="only this Deployment (default: every labelled one)")
    parser.add_argument("--container", default="engine", help="engine container name (default engine)")
    parser.add_argument("--interval", type=float, default=30.0, metavar="S",
                        help="seconds between resyncs and post-phase SLO checks (default 30)")
    parser.add_argument("--backoff", type=float, default=600.0, metavar="S",
                        help="seconds before a refused request is judged again (default 600)")
    parser.add_argument("--lease-name", default="specgate-controller", help="Lease for leader election")
    parser.add_argument("--identity", default=os.environ.get("POD_NAME") or socket.gethostname(),
                        help="this replica's name in the Lease (default $POD_NAME, else the host name)")
    parser.add_argument("--prometheus", help="Prometheus URL for post-phase evidence (overrides the plan's)")
    parser.add_argument("--metrics", action="append", default=[], metavar="URL",
                        help="exporter /metrics URL for evidence (repeatable)")
    parser.add_argument("--metrics-listen", default="127.0.0.1:9402", metavar="HOST:PORT",
                        help="serve specgate_gate_* metrics here (default 127.0.0.1:9402; empty: off)")


def run(args: argparse.Namespace) -> int:
    _log_to_stderr()
    if not args.plan.exists():
        return invalid(f"no plan at {args.plan}", PREFIX)
    if args.interval <= 0 or args.backoff < 0:
        return invalid("--interval must be positive and --backoff not negative", PREFIX)
    if not args.plan.is_dir():  # a plan file (a FIFO or a device is refused by the reader, never waited on)
        from gate.plan.model import load_plan

        try:
            load_plan(args.plan)
        except InputError as e:  # one-line plan errors
            return invalid(f"invalid plan {args.plan}: {e}", PREFIX)
    try:
        from gate.evidence.pods import default_api_client

        api_client = default_api_client()
    except ImportError:
        return invalid("the kubernetes client is not installed (pip install 'specgate[kube]')", PREFIX)
    except Exception as e:  # the kubernetes client's own errors (no config, bad kubeconfig): one line
        return invalid(f"no cluster access: {e}", PREFIX)

    from gate.kube.controller import Controller, ControllerConfig

    config = ControllerConfig(namespace=args.namespace, plan=args.plan, identity=args.identity,
                              deployment=args.deployment, container=args.container, interval_s=args.interval,
                              lease_name=args.lease_name, lease_duration_s=max(15, int(3 * args.interval)),
                              backoff_s=args.backoff, prometheus=args.prometheus, metrics=tuple(args.metrics))
    controller = Controller(api_client, config)
    if args.metrics_listen:
        from prometheus_client import start_http_server

        try:
            host, port = parse_listen(args.metrics_listen)
            start_http_server(port, addr=host, registry=controller.metrics.registry)
        except (argparse.ArgumentTypeError, OSError) as e:
            return invalid(f"--metrics-listen: {e}", PREFIX)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"specgate controller: {config.identity} watching {config.namespace} "
          f"(lease {config.lease_name}, plan {config.plan})", file=sys.stderr)
    try:
        controller.run(stop)
    except KeyboardInterrupt:
        pass
    return EXIT_PASS
