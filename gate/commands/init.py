"""Write a commented starting plan from your model configs.

    specgate init --target CONFIG [--drafter CONFIG] --engine vllm|sglang [--method M] [--out FILE]

Reads the target's config.json (and the drafter's), detects the drafter family the way the
gate's co-design line does (EAGLE-3, DFlash, DSpark, MTP, a plain draft model; ngram and suffix
need no drafter), checks it against --method (a contradiction is invalid input), picks a depth
that fits the family and the engine (DFlash/DSpark from the drafter's block_size, MTP from the
target's MTP layers, else k = 3 — choose it with `specgate tune`), and writes a plan whose keys
you must decide (budgets, request mixes, acceptance target and its source, memory fraction,
revisions) are `null` with a `# TODO`, listed again under `placeholders:` at the end: while one is
still empty, `check` keeps the line that reads it from passing (inconclusive, naming it); delete a
key from that list to say that empty is meant. The plan loads as written; `specgate check --plan
FILE` then names what is still missing. Every key: docs/reference/plan.md.

Exit codes: 0 written, 3 invalid input (unreadable config, unknown family, method mismatch,
existing --out without --force).
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
from pathlib import Path

from exporter.engines import ENGINE_KINDS
from gate.commands._args import exit_invalid_on_usage_error, invalid, positive_int
from gate.status import EXIT_PASS, InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gate.plan.init import METHODS

    exit_invalid_on_usage_error(parser)
    parser.add_argument("--target", required=True, type=Path, metavar="CONFIG",
                        help="the target's config.json (or a directory holding one)")
    parser.add_argument("--drafter", type=Path, metavar="CONFIG",
                        help="the drafter's config.json (not for ngram/suffix; not needed for an MTP head in the target)")
    parser.add_argument("--engine", required=True, choices=ENGINE_KINDS, help="the serving engine")
    parser.add_argument("--method", choices=METHODS, metavar="M",
                        help=f"engine.speculative.method: {', '.join(METHODS)} (default: the detected family)")
    parser.add_argument("--num-speculative-tokens", type=positive_int, metavar="K", dest="depth",
                        help="depth k (default: what the family implies, else 3)")
    parser.add_argument("--tp", type=positive_int, default=1, metavar="N", help="tensor-parallel size (default 1)")
    parser.add_argument("--name", help="the target's name in the plan (default: from the config's path)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the plan here (default: stdout)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing --out")


def _write_regular(path: Path, text: str) -> None:
    """Write `text` to a regular file only: opened without blocking (a FIFO put there since the check has no
    reader: ENXIO at once, never a wait) and refused unless it is a regular file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        os.ftruncate(fd, 0)
        data = text.encode("utf-8")
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


def run(args: argparse.Namespace) -> int:
    from gate.plan.init import InitRequest, render
    from gate.plan.model import load_plan

    if args.out is not None and (args.out.exists() or args.out.is_symlink()):
        if not args.out.is_file():  # a FIFO would block the write, a device or a directory is no plan file
            return invalid(f"{args.out} exists and is not a regular file: give a plan file path")
        if not args.force:
            return invalid(f"{args.out} exists (use --force to overwrite)")
    req = InitRequest(target=args.target, engine=args.engine, method=args.method, drafter=args.drafter,
                      out=args.out, name=args.name, tp=args.tp, depth=args.depth)
    try:
        text = render(req)
    except InputError as e:  # InitError and every reader's error
        return invalid(str(e))
    if args.out is None:
        sys.stdout.write(text)
        return EXIT_PASS
    try:
        _write_regular(args.out, text)
    except OSError as e:
        return invalid(f"cannot write {args.out}: {e.strerror or e}")
    try:
        load_plan(args.out)
    except InputError as e:  # the writer's own bug, never the user's: say so
        return invalid(f"the written plan does not load: {e}")
    print(f"specgate init: wrote {args.out}; fill in the TODO lines, then: specgate check --plan {args.out}",
          file=sys.stderr)
    return EXIT_PASS
