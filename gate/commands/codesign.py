"""Check that a drafter matches its target: taps, vocabulary, hidden size, depth, block size.

Runs design.md's co-design table from two config.json files. The drafter family is
detected from the drafter config (EAGLE-3, DFlash, DSpark, MTP, plain draft model); pass
`none` as DRAFTER_CONFIG for a target's own MTP layers (or for ngram: n/a). EAGLE-3 tap
ids mean different layers in the two engines (vLLM: stream entering layer j, ids in
[0, L]; SGLang: output of layer k, ids in [0, L-1]); --engine picks the convention and
each finding names it. --num-speculative-tokens is vLLM's num_speculative_tokens or
SGLang's draft tokens per verify.

Exit codes: 0 pass or warn (or n/a), 1 fail, 3 invalid input.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from exporter.engines import ENGINE_KINDS
from gate.commands._args import exit_invalid_on_usage_error, invalid, positive_int
from gate.model.engines import DEFAULT_KIND
from gate.status import EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_PASS, InputError, Status

if TYPE_CHECKING:  # the checks load in run(): `specgate --help` imports no line
    from gate.checks.codesign import CodesignResult

NO_DRAFTER = ("none", "-")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    exit_invalid_on_usage_error(parser)
    parser.add_argument("target", metavar="TARGET_CONFIG", help="the target's config.json (or its directory)")
    parser.add_argument("drafter", metavar="DRAFTER_CONFIG",
                        help="the drafter's config.json (or its directory); 'none' for the target's MTP layers")
    parser.add_argument("--engine", choices=ENGINE_KINDS, default=DEFAULT_KIND,
                        help=f"serving engine (default {DEFAULT_KIND})")
    parser.add_argument("--num-speculative-tokens", type=positive_int, metavar="K",
                        help="draft depth: vLLM num_speculative_tokens / SGLang draft tokens per verify")
    parser.add_argument("--target-tp", type=positive_int, metavar="N", help="target tensor-parallel size (default 1)")
    parser.add_argument("--draft-tp", type=positive_int, metavar="N",
                        help="drafter tensor-parallel size (default: the engine's, = target TP)")
    parser.add_argument("--max-model-len", type=positive_int, metavar="N",
                        help="served context length (default: the target's max_position_embeddings)")
    parser.add_argument("--deployed-target", metavar="NAME",
                        help="the deployed target's name or path, compared with the drafter's verifier")
    parser.add_argument("--drafter-weights", type=Path, metavar="PATH",
                        help="drafter safetensors file or directory (to see the d2t vocabulary mapping)")
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")


def as_json(result: CodesignResult) -> dict[str, object]:
    """The contract shape: {"status", "findings": [{"check", "status", "detail"}]}."""
    return {"status": result.status.value, "findings": [f.to_json() for f in result.findings]}


def as_text(result: CodesignResult, engine: str) -> str:
    head = f"codesign: {result.status.value.upper()} ({result.family or 'no'} drafter, {engine})"
    width = max((len(f.check) for f in result.findings), default=0)
    rows = [f"  {f.status.value:<5} {f.check:<{width}}  {f.detail}" for f in result.findings]
    return "\n".join([head, *rows])


def run(args: argparse.Namespace) -> int:
    from gate.checks.codesign import codesign
    from gate.inputs.configs import load_config
    from gate.inputs.jsontext import dumps
    from gate.inputs.weights import has_tensor
    from gate.model.depth import speculative_depth

    try:
        target = load_config(args.target)
        drafter = None if str(args.drafter).lower() in NO_DRAFTER else load_config(args.drafter)
        # --num-speculative-tokens is the engine's own spelling (vLLM k, SGLang draft tokens): the k rule reads it
        k = speculative_depth(args.engine, num_speculative_tokens=args.num_speculative_tokens,
                              num_draft_tokens=args.num_speculative_tokens)
        d2t = has_tensor(args.drafter_weights, "d2t") if args.drafter_weights is not None else None
        result = codesign(target, drafter, engine=args.engine, depth=k,
                          draft_tp=args.draft_tp, target_tp=args.target_tp, max_model_len=args.max_model_len,
                          deployed_target=args.deployed_target, d2t_tensor=d2t)
        text = dumps(as_json(result), "codesign") if args.format == "json" else as_text(result, args.engine)
    except InputError as e:  # ConfigError, every reader's error and a non-finite number: one line, exit 3
        return invalid(str(e))
    print(text)
    if result.status is Status.FAIL:
        return EXIT_FAIL
    # A rule that could not read its fields is "not checked": inconclusive, never a pass (issue 10).
    return EXIT_INCONCLUSIVE if result.status is Status.INCONCLUSIVE else EXIT_PASS
