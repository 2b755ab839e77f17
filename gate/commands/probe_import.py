"""Import another benchmark's results as a probe record, for `specgate compare` and the acceptance line.

  specgate probe import --from vllm-bench --arm baseline --engine vllm --engine-version 0.32.0 \\
      --temperature 0 --out base.json c1.json c8.json c8-again.json

Each FILE is one run at one concurrency and becomes one cell; runs of one concurrency are its
repetitions, in the order given (run the tool several times per concurrency: the rank test of
`compare` needs at least 4 a side to reach p < 0.05, 5 by default). Tools:

- `vllm-bench`: the JSON of `vllm bench serve --save-result --save-detailed` with
  `--max-concurrency C` (per-request TTFT, chunk gaps, latencies, output lengths; vLLM's own fields);
- `aiperf`: AIPerf's per-request `profile_export.jsonl` (pass `--concurrency`, which that file does not
  record; AIPerf's version is read from `profile_export_aiperf.json` beside it);
- `guidellm`: guidellm 0.8's report (`guidellm run --output kind=json` or `kind=yaml`): one cell per
  benchmark of a `concurrent` or `synchronous` profile (its requests' timings, its measured window).

The record holds the same numbers a native probe cell does (TTFT = first chunk − send, TPOT =
(last chunk − first chunk) / (tokens − 1), served rate = output tokens / the run's wall clock), and
is held to the same rules: impossible numbers in a file, or a record inconsistent with itself, are exit
3 with the reason. What a file does not record — the engine's kind and version, the arm, the
speculative config, the temperature — comes from the flags, else stays unknown, and `compare` then
refuses the record the way it refuses a native one with those fields unknown.

Exit codes: 0 record written, 3 invalid input (one line on stderr; nothing written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from exporter.engines import ENGINE_KINDS
from gate.commands._args import exit_invalid_on_usage_error, invalid, positive_int
from gate.status import EXIT_PASS, InputError


def _temperature(value: str) -> float:
    try:
        t = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {value!r}") from None
    if not t >= 0 or t == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {value!r}")
    return t


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from gate.probe.importers import READERS

    exit_invalid_on_usage_error(parser)
    parser.add_argument("files", nargs="+", metavar="FILE", help="result files, one run (cell) each")
    parser.add_argument("--from", dest="tool", required=True, choices=sorted(READERS), help="the tool that wrote them")
    parser.add_argument("--arm", required=True, choices=("baseline", "speculative"), help="what the engine ran")
    parser.add_argument("--out", required=True, metavar="FILE", help="where the probe record (JSON) goes")
    parser.add_argument("--engine", choices=ENGINE_KINDS,
                        help="the engine the runs measured (not in the files; unknown: compare refuses the record)")
    parser.add_argument("--engine-version", metavar="V", help="its version (not in the files)")
    parser.add_argument("--model", metavar="NAME", help="served model name (default: the one the file records)")
    parser.add_argument("--speculative-config", metavar="JSON",
                        help="the engine's speculative config, recorded as is (speculative arm)")
    parser.add_argument("--temperature", type=_temperature, metavar="T",
                        help="the sampling temperature the tool sent (vllm bench serve does not save it: required)")
    parser.add_argument("--concurrency", type=positive_int, metavar="C",
                        help="the concurrency of every file (AIPerf's export does not record it; with vllm-bench "
                             "it must match the file's --max-concurrency)")
    parser.add_argument("--mix", default="imported", metavar="NAME", help="the mix name in the record")
    parser.add_argument("--tool-version", metavar="V", help="the tool's version, where its file does not record it")


def run(args: argparse.Namespace) -> int:
    from gate.evidence.probes import ProbeError
    from gate.probe.importers import ImportSettings, import_files
    from gate.probe.record import dump
    from gate.probe.runner import speculative_settings

    out = Path(args.out)
    try:
        spec = speculative_settings(args.arm, args.speculative_config)  # the probe's own rule
        settings = ImportSettings(arm=args.arm, engine=args.engine, engine_version=args.engine_version,
                                  model=args.model, speculative=spec, temperature=args.temperature,
                                  concurrency=args.concurrency, mix=args.mix, tool_version=args.tool_version)
        record = import_files(args.tool, args.files, settings)
        text = dump(record)
    except (ProbeError, InputError) as e:
        return invalid(f"probe import: {e}")
    try:
        out.write_text(text)
    except OSError as e:
        return invalid(f"probe import: cannot write {out}: {e.strerror or e}")
    cells = len(record.cells)
    print(f"wrote {out}: {cells} cell(s) from {args.tool} ({record.source})", file=sys.stderr, flush=True)
    return EXIT_PASS
