"""`specgate` console script: dispatches the exporter commands and the gate commands.

Exit codes (gate): 0 pass, 1 fail, 2 inconclusive, 3 invalid input.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from gate.status import EXIT_INVALID

# (subcommand, module under gate.commands, one-line help). Order is the order in --help.
COMMANDS: list[tuple[str, str, str]] = [
    ("check", "check", "judge a rollout plan: five budget lines + acceptance SLO (exit 0/1/2/3)"),
    ("budget", "budget", "the memory bill of a plan: weights, KV per token, predicted vs allocated pool"),
    ("kv", "kv", "KV-cache bytes per token from a Hugging Face config.json"),
    ("codesign", "codesign", "check that a drafter matches its target (taps, vocab, hidden size, depth)"),
    ("tune", "tune", "choose the speculation depth k: acceptance and speedup by depth and concurrency"),
    ("serve", "serve", "HTTP gate for Argo Rollouts (web metric) and Flagger (webhook)"),
    ("controller", "controller", "Kubernetes controller: flip the drafter on only after the gate passes"),
    ("probe", "probe", "drive a live engine with a request mix and record served rate, TTFT, TPOT, L per cell"),
    ("compare", "compare", "does speculation pay? two probe records: speedup, rank test, crossover"),
    ("init", "init", "write a commented starting plan from your configs (fill in what it marks TODO)"),
    ("schema", "schema", "print the JSON Schema of a rollout plan (editors complete keys from it)"),
]



class _Parser(argparse.ArgumentParser):
    """Usage errors are invalid input: exit 3, not argparse's 2 (2 means "inconclusive" here)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(EXIT_INVALID)


def version() -> str:
    """The installed distribution's version (`specgate-llm`); from a source tree that was never installed,
    pyproject.toml's `project.version`; "unknown" when neither says."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("specgate-llm")
    except PackageNotFoundError:
        import tomllib
        from pathlib import Path

        from gate.inputs.loading import read_text

        try:
            doc = tomllib.loads(read_text(Path(__file__).resolve().parents[1] / "pyproject.toml", "pyproject.toml",
                                          1 << 20))
        except ValueError:  # InputError (missing, too large, not text) or TOMLDecodeError
            return "unknown"
        return str(doc.get("project", {}).get("version", "unknown"))


def build_parser() -> argparse.ArgumentParser:
    from exporter import cli as exporter_cli

    parser = _Parser(
        prog="specgate",
        description="Measure and gate speculative decoding on vLLM and SGLang.",
    )
    parser.add_argument("--version", action="version", version=f"specgate {version()}",
                        help="print `specgate <version>` and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    exp = sub.add_parser("exporter", help="the exporter sidecar and one-shot scrapes (run | once | window)",
                         description="The exporter: scrape an engine's /metrics and expose specgate_* metrics.")
    exporter_cli.add_exporter_commands(exp)
    rep = sub.add_parser("replay", help="serve recorded real captures as a live engine on loopback",
                         description=exporter_cli.REPLAY_DESCRIPTION)
    exporter_cli.add_replay_arguments(rep)
    rep.set_defaults(func=exporter_cli.run_replay)
    for name, module, help_text in COMMANDS:
        mod = importlib.import_module(f"gate.commands.{module}")
        p = sub.add_parser(name, help=help_text, description=(mod.__doc__ or help_text).strip(),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
        p.set_defaults(func=mod.run)
    return parser


# `specgate probe <NAME>` subcommands with arguments of their own (not probe's): (probe, NAME) -> module.
SUBCOMMANDS: dict[tuple[str, str], str] = {("probe", "ab"): "probe_ab", ("probe", "import"): "probe_import"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    module = SUBCOMMANDS.get((argv[0], argv[1])) if len(argv) >= 2 else None
    parser: argparse.ArgumentParser
    if module is not None:
        mod = importlib.import_module(f"gate.commands.{module}")
        parser = _Parser(prog=f"specgate {argv[0]} {argv[1]}", description=(mod.__doc__ or "").strip(),
                         formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(parser)
        parser.set_defaults(func=mod.run)
        argv = argv[2:]
    else:
        parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
