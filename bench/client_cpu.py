"""The clients' own CPU per token on a real engine: `specgate probe` (one thread per request in flight) against
`vllm bench serve`'s driver (one asyncio loop), at one concurrency, the same engine, turn by turn (issue 23).

Why: on a 2-CPU machine the engine and the client share the CPUs, so a client that costs more CPU per token
slows the engine it measures; the calibration bench (`bench/probe_vs_reference.py`) can only say the engine
ran slower during one tool's runs. This says what each client spent.

How: each tool runs a small (2 C requests) and a large (16 C requests) run per repetition, 32-token prompts,
64 output tokens with `ignore_eos`; CPU per token = (CPU of the large run - CPU of the small one) / (their
tokens' difference), so the fixed costs (the probe's process start-up and client-ceiling measurement, the
driver's dataset set-up) fall out. The probe's CPU is its process's and its children's (`getrusage`
RUSAGE_CHILDREN around the `specgate probe` process), the driver's is its process's (`/proc/PID/stat` utime +
stime around one `main()`).

    python bench/client_cpu.py [--concurrency 32] [--repetitions 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "bench", ROOT / "tests" / "e2e"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import probe_vs_reference as pvr  # noqa: E402


def _proc_cpu(pid: int) -> float:
    """utime + stime of one process, seconds (fields 14 and 15 of /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@dataclass(frozen=True)
class Measured:
    tool: str
    repetition: int
    requests: int
    cpu_seconds: float
    output_tokens: int
    tokens_per_second: float
    engine_tokens_per_second: float | None
    wall_seconds: float


def measure(url: str, tokenizer: str, python: Path, concurrency: int, repetitions: int, work: Path,
            env: dict[str, str] | None) -> list[Measured]:
    out: list[Measured] = []
    with (work / "tools.log").open("a") as log:
        ref = pvr.Reference(python, log, env)
        try:
            for rep in range(repetitions):
                for n in (2 * concurrency, 16 * concurrency):
                    shape = pvr.Shape(requests_per_run=n)
                    for tool in (("probe", "vllm-bench") if rep % 2 == 0 else ("vllm-bench", "probe")):
                        before, w0 = pvr.engine_page(url), time.time()
                        if tool == "probe":
                            c0 = _children_cpu()
                            cell = pvr.probe_run(url, concurrency, shape, work / f"probe-{rep}-{n}.json", log)
                            cpu = _children_cpu() - c0
                        else:
                            c0 = _proc_cpu(ref.proc.pid)
                            cell, _ = pvr.reference_run(ref, url, tokenizer, "tiny", concurrency, shape, work,
                                                        f"bench-{rep}-{n}.json", seed=3 + rep)
                            cpu = _proc_cpu(ref.proc.pid) - c0
                        clock = pvr.EngineClock(before, pvr.engine_page(url)).of(concurrency)[2]
                        m = Measured(tool, rep, n, cpu, cell.output_tokens, cell.served_tokens_per_second, clock,
                                     time.time() - w0)
                        out.append(m)
                        print(f"[client-cpu] rep {rep + 1} {tool} N={n}: CPU {cpu:.2f} s, {m.output_tokens} tokens, "
                              f"{m.tokens_per_second:.0f} tok/s", file=sys.stderr, flush=True)
        finally:
            ref.close()
    return out


def per_token(runs: list[Measured]) -> dict[str, list[float]]:
    """tool -> CPU microseconds per token, one per repetition (large run minus small run)."""
    out: dict[str, list[float]] = {}
    for tool in ("probe", "vllm-bench"):
        for rep in sorted({r.repetition for r in runs}):
            small, large = sorted((r for r in runs if r.tool == tool and r.repetition == rep), key=lambda r: r.requests)
            out.setdefault(tool, []).append(1e6 * (large.cpu_seconds - small.cpu_seconds)
                                            / (large.output_tokens - small.output_tokens))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--repetitions", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    import harness
    import vllm_live

    python = vllm_live.ensure_vllm()
    models = harness.ensure_models(python)
    work = Path(tempfile.mkdtemp(prefix="client-cpu-"))
    t0 = time.time()
    engine = vllm_live.start_arm("nospec", models, python=python, log_dir=work,
                                 extra_args=["--max-num-seqs", str(args.concurrency)])
    try:
        engine.wait_ready(600)
        runs = measure(engine.url, str(models / "target"), python, args.concurrency, args.repetitions, work,
                       harness._engine_env())
    finally:
        engine.stop()
    us = per_token(runs)
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"concurrency": args.concurrency, "cpu_us_per_token": us, "load_average": load,
                          "wall_seconds": time.time() - t0, "runs": [asdict(r) for r in runs]}, indent=2))
    else:
        for tool, values in us.items():
            print(f"{tool:>10}: {' '.join(f'{v:.1f}' for v in values)} us CPU per token "
                  f"(median {statistics.median(values):.1f}) at concurrency {args.concurrency}")
        print(f"load average {load[0]:.2f} {load[1]:.2f}; {time.time() - t0:.0f} s; logs in {work}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
