"""Exporter command line: `specgate exporter run|once|window` and `specgate replay`.

Lives in `exporter` so `python -m exporter` runs the sidecar without importing `gate`.
With `--format json` stdout holds only the JSON document; notices go to stderr.
Exit codes: 0 ok, 3 invalid input (a page that is not Prometheus text, a missing file).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from exporter.engines import ENGINE_KINDS
from exporter.exits import EXIT_INVALID, EXIT_OK

REPLAY_DESCRIPTION = (
    "Serve a directory of recorded real /metrics captures on loopback as if it were a live engine: "
    "counters advance over time between consecutive captures (plain text format). "
    "The embedded default behind `make demo`."
)


def add_exporter_commands(parser: argparse.ArgumentParser) -> None:
    from exporter.settings import add_run_arguments

    sub = parser.add_subparsers(dest="exporter_command", metavar="SUBCOMMAND", required=True)
    run = sub.add_parser("run", help="run the sidecar: scrape the engine, serve specgate_* on /metrics",
                         description="Run the exporter sidecar. Every flag also reads SPECGATE_<NAME> from the environment.")
    add_run_arguments(run)
    run.set_defaults(func=cmd_run)

    once = sub.add_parser("once", help="scrape once (URL or file) and print the normalised snapshot",
                          description="Scrape an engine (or read a capture file) once and print the normalised snapshot.")
    src = once.add_mutually_exclusive_group(required=True)
    src.add_argument("--engine-url", help="engine base URL or its /metrics URL, e.g. http://127.0.0.1:8000")
    src.add_argument("--from-file", type=Path, help="a recorded /metrics page")
    once.add_argument("--engine", choices=["auto", *ENGINE_KINDS], default="auto",
                      help="engine kind (default: detect from metric prefixes)")
    once.add_argument("--format", choices=["json", "prom"], default="json",
                      help="json: normalised snapshot; prom: the specgate_* exposition of this one scrape")
    once.add_argument("--timeout", type=float, default=5.0, help="connect/read timeout in seconds (default 5)")
    once.set_defaults(func=cmd_once)

    win = sub.add_parser("window", help="derived quantities between two captures",
                         description="Derive acceptance length/rate, per-position rates, TTFT quantiles and decode "
                                     "rate between two captures. If the engine restarted in between, the window is "
                                     "marked reset and values come from AFTER alone.")
    win.add_argument("before", type=Path, help="the earlier capture")
    win.add_argument("after", type=Path, help="the later capture")
    win.add_argument("--seconds", type=float, default=None,
                     help="window length in seconds (decode rate); default: unknown unless the files say")
    win.add_argument("--min-drafts", type=float, default=1, help="fewer drafts than this: no acceptance value (default 1)")
    win.add_argument("--engine", choices=["auto", *ENGINE_KINDS], default="auto")
    win.add_argument("--format", choices=["json"], default="json")
    win.set_defaults(func=cmd_window)


def add_replay_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", type=Path, nargs="?", default=None,
                        help="directory of captures (name order; before/during/after in time order); default: the embedded vLLM ngram captures")
    parser.add_argument("--host", default="127.0.0.1", help="listen address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="listen port (default: a free port, printed on stderr)")
    parser.add_argument("--step-seconds", type=float, default=5.0,
                        help="seconds to advance from one capture to the next (default 5)")
    parser.add_argument("--loop", action="store_true", help="after the last capture, keep counting up from it")


def _err(msg: str) -> None:
    print(f"specgate: error: {msg}", file=sys.stderr)


def cmd_run(args: argparse.Namespace) -> int:
    from exporter.server import run_sidecar
    from exporter.settings import settings_from_args

    try:
        settings = settings_from_args(args)
    except ValueError as e:
        _err(str(e))
        return EXIT_INVALID
    return run_sidecar(settings)


def cmd_once(args: argparse.Namespace) -> int:
    from exporter.scrape import ScrapeError, read_file_snapshot, scrape_once

    try:
        if args.from_file is not None:
            snap = read_file_snapshot(args.from_file, args.engine)
        else:
            snap = scrape_once(args.engine_url, args.engine, timeout=args.timeout)
    except ScrapeError as e:
        _err(str(e))
        return EXIT_INVALID
    if args.format == "json":
        from exporter.snapshot_json import snapshot_to_json

        print(json.dumps(snapshot_to_json(snap), indent=2))
    else:
        from exporter.collect import exposition_of_snapshot

        sys.stdout.write(exposition_of_snapshot(snap))
    return EXIT_OK


def cmd_window(args: argparse.Namespace) -> int:
    from exporter.derive import derive_window
    from exporter.scrape import ScrapeError, read_file_snapshot

    try:
        before = read_file_snapshot(args.before, args.engine)
        after = read_file_snapshot(args.after, args.engine if args.engine != "auto" else before.engine)
    except ScrapeError as e:
        _err(str(e))
        return EXIT_INVALID
    if before.engine != after.engine:
        _err(f"{args.before} is {before.engine} but {args.after} is {after.engine}")
        return EXIT_INVALID
    seconds = args.seconds if args.seconds is not None else 0.0
    stats = derive_window(before, after, seconds=seconds, min_drafts=args.min_drafts)
    streams = [w.to_json() for w in stats]
    if args.seconds is None:
        for s in streams:
            s["decode_tokens_per_second"] = None
    print(json.dumps({"engine": after.engine, "streams": streams}, indent=2))
    return EXIT_OK


def run_replay(args: argparse.Namespace) -> int:
    from exporter.replay import serve_replay

    return serve_replay(args.dir, host=args.host, port=args.port, step_seconds=args.step_seconds, loop=args.loop)


def main(argv: list[str] | None = None) -> int:
    """`python -m exporter [run flags]`: the sidecar alone, without `gate`."""
    from exporter.settings import add_run_arguments

    parser = argparse.ArgumentParser(prog="python -m exporter", description="Run the specgate exporter sidecar.")
    add_run_arguments(parser)
    return cmd_run(parser.parse_args(argv))
