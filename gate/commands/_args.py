"""What the subcommands share: argparse value types, one-line usage errors, the one-line invalid-input exit.

Why a module of its own: the commands are faces (parse, call one function, print); the few helpers they have
in common live here, so no command imports another command, and exit codes come only from `gate.status`.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn

from gate.status import EXIT_INVALID


def exit_invalid_on_usage_error(parser: argparse.ArgumentParser) -> None:
    """Make this subcommand's usage errors one line and exit 3 (invalid input), as the gate CLI promises."""

    def error(message: str) -> NoReturn:
        parser.exit(EXIT_INVALID, f"specgate: error: {parser.prog}: {message}\n")

    parser.error = error  # type: ignore[method-assign]


def invalid(message: str, prefix: str = "specgate: error: ") -> int:
    """One line on stderr and exit 3: every command's answer to invalid input (gate.status.InputError)."""
    print(f"{prefix}{message}", file=sys.stderr)
    return EXIT_INVALID


def positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value!r}")
    return n


def positive_float(value: str) -> float:
    """A finite number above 0 (`nan`, `inf` and 0 are refused)."""
    try:
        x = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {value!r}") from None
    if not x > 0 or math.isinf(x):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {value!r}")
    return x


def parse_listen(value: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 as `[::1]:9401`)."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise argparse.ArgumentTypeError(f"--listen must be HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)
