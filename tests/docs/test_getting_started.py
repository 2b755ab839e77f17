"""docs/getting-started.md runs: its marked commands are executed and their pasted output must still be true.

The walk-through's blocks carry HTML comments the reader does not see:

- `<!-- run exit=N -->` before a ```console block: every `$ ` line (with `\\` continuations) is run by bash in a
  scratch copy of the repository; the block's last command must exit N, the others 0; every output line shown
  in the block (blank and `…` lines aside) must be a line the commands printed (whitespace at the ends ignored),
  so a changed reason, number or decision fails here before the doc can go stale.
- `<!-- file: NAME -->` before a fenced block: its content is written to NAME first (the plan the reader saves).
- `<!-- given: NAME ... -->`: what an engine-only step wrote is put in place from the committed records of the
  real run (`tests/docs/getting_started/`) or the repository's fixtures (`tests/fixtures/tune-emit/`).

Blocks without a marker (the live-engine steps: `probe ab`, the canary) are not run here; the canary's plan runs
against a replayed engine in `tests/gate/test_examples_live.py`. Needs `helm` and `promtool` (`make tools`).
Cost: about 9 s (five `check`s, three `init`s, `compare`, `tune`, one `helm template`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "getting-started.md"
RECORDS = REPO / "tests" / "docs" / "getting_started"
GIVEN_FROM = (RECORDS, REPO / "tests" / "fixtures" / "tune-emit")
# what the walk-through's commands read, copied so that what they write stays in the scratch directory
COPIED = ("tests/fixtures/configs", "tests/fixtures/vllm", "examples/plans", "deploy/helm", "deploy/prometheus")
TOOLS = REPO / ".tools" / "bin"

MARK = re.compile(r"<!--\s*(run|file|given)\b(.*?)-->")
FENCE = re.compile(r"^```")


@dataclass
class Step:
    kind: str  # run | file | given
    arg: str
    body: list[str] = field(default_factory=list)
    line: int = 0


def steps(text: str) -> list[Step]:
    """The marked blocks in document order (a marker applies to the next fenced block; `given` to none)."""
    lines = text.splitlines()
    out: list[Step] = []
    pending: list[Step] = []
    i = 0
    while i < len(lines):
        m = MARK.search(lines[i])
        if m:
            s = Step(m.group(1), m.group(2).strip().lstrip(":").strip(), line=i + 1)
            (out if s.kind == "given" else pending).append(s)
            i += 1
            continue
        if FENCE.match(lines[i]):
            j = i + 1
            while j < len(lines) and not FENCE.match(lines[j]):
                j += 1
            for s in pending:
                s.body = lines[i + 1:j]
                out.append(s)
            pending = []
            i = j + 1
            continue
        i += 1
    assert not pending, f"marker(s) without a block: {[p.line for p in pending]}"
    return out


def commands(body: list[str]) -> tuple[list[str], list[str]]:
    """(`$ ` commands with continuations joined, the output lines shown)."""
    cmds: list[str] = []
    shown: list[str] = []
    cont = False
    for ln in body:
        if cont:
            cmds[-1] += "\n" + ln
            cont = ln.endswith("\\")
        elif ln.startswith("$ "):
            cmds.append(ln[2:])
            cont = ln.endswith("\\")
        elif ln.strip() and "…" not in ln:
            shown.append(ln.strip())
    return cmds, shown


def test_the_doc_has_what_the_test_runs() -> None:
    """The markers are there (a doc edit that drops them would silently stop the test)."""
    kinds = [s.kind for s in steps(DOC.read_text(encoding="utf-8"))]
    assert kinds.count("run") >= 7 and kinds.count("file") == 4 and kinds.count("given") == 2, kinds


def test_getting_started_commands_run_and_print_what_the_doc_shows(tmp_path: Path) -> None:
    for tool in ("helm", "promtool"):
        # make test installs them (make tools); a missing one fails here rather than skipping the walk-through
        assert (TOOLS / tool).exists() or shutil.which(tool) is not None, f"{tool} not installed: run make tools"
    for rel in COPIED:
        shutil.copytree(REPO / rel, tmp_path / rel)
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), str(TOOLS), os.environ["PATH"]]),
           "LC_ALL": "C", "COLUMNS": "120", "NO_COLOR": "1"}
    ran = 0
    for step in steps(DOC.read_text(encoding="utf-8")):
        where = f"docs/getting-started.md:{step.line}"
        if step.kind == "file":
            (tmp_path / step.arg.strip()).write_text("\n".join(step.body) + "\n", encoding="utf-8")
            continue
        if step.kind == "given":
            for name in step.arg.split():
                src = next((d / name for d in GIVEN_FROM if (d / name).is_file()), None)
                assert src is not None, f"{where}: {name} is in none of {GIVEN_FROM}"
                shutil.copy(src, tmp_path / name)
            continue
        m = re.fullmatch(r"exit=(\d+)", step.arg)
        assert m, f"{where}: run marker wants exit=N, got {step.arg!r}"
        cmds, shown = commands(step.body)
        assert cmds, f"{where}: a run block without commands"
        printed: list[str] = []
        for n, cmd in enumerate(cmds):
            r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True,
                               timeout=120)
            want = int(m.group(1)) if n == len(cmds) - 1 else 0
            assert r.returncode == want, f"{where}: {cmd!r} exited {r.returncode}, the doc says {want}:\n" \
                                         f"{r.stdout[-2000:]}{r.stderr[-2000:]}"
            printed += [ln.strip() for ln in (r.stdout + "\n" + r.stderr).splitlines()]
            ran += 1
        missing = [ln for ln in shown if ln not in printed]
        assert not missing, f"{where}: the doc shows lines the commands no longer print:\n" + "\n".join(missing) + \
            "\n--- printed ---\n" + "\n".join(printed[:80])
    assert ran >= 9, ran
