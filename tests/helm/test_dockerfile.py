"""Structure of the specgate image's Dockerfile (no docker daemon here, so no `docker build`): pinned base,
non-root numeric user that matches the chart's runAsUser, ENTRYPOINT specgate, and a build context
(.dockerignore) that holds exactly what the build stage needs — proven by running that stage's pip command
on a copy of the context."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helm.render import REPO, default_values

DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"


@dataclass(frozen=True)
class Instruction:
    op: str
    arg: str


def instructions(text: str) -> list[Instruction]:
    """Dockerfile instructions with line continuations joined and comments dropped."""
    out: list[Instruction] = []
    buf = ""
    for line in text.splitlines():
        s = line.strip()
        if not buf and (not s or s.startswith("#")):
            continue
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        op, _, arg = buf.partition(" ")
        out.append(Instruction(op.upper(), arg.strip()))
        buf = ""
    return out


def stages(ins: list[Instruction]) -> list[list[Instruction]]:
    out: list[list[Instruction]] = []
    for i in ins:
        if i.op == "FROM":
            out.append([])
        if out:
            out[-1].append(i)
    return out


INS = instructions(DOCKERFILE.read_text(encoding="utf-8"))
STAGES = stages(INS)
FINAL = STAGES[-1]


def test_every_base_image_is_pinned_python_311_slim() -> None:
    froms = [i.arg.split()[0] for i in INS if i.op == "FROM"]
    assert froms
    for image in froms:
        # a full patch version and a distribution (or a digest): never a moving tag like 3.11-slim or latest
        assert re.fullmatch(r"python:3\.11\.\d+-slim-[a-z]+(@sha256:[0-9a-f]{64})?", image), image


def test_final_stage_runs_as_the_charts_non_root_user() -> None:
    users = [i.arg for i in FINAL if i.op == "USER"]
    assert users, "no USER in the final stage: the image would run as root"
    uid, _, gid = users[-1].partition(":")
    # numeric, so the kubelet can verify runAsNonRoot without the chart's runAsUser
    assert uid.isdigit() and int(uid) != 0 and (not gid or int(gid) != 0)
    psc = default_values()["podSecurityContext"]
    assert (int(uid), int(gid or uid)) == (psc["runAsUser"], psc["runAsGroup"])
    after_user = FINAL[FINAL.index(next(i for i in FINAL if i.op == "USER")):]
    assert not [i for i in after_user if i.op == "RUN"], "RUN after USER would need root"


def test_entrypoint_is_the_specgate_console_script() -> None:
    ep = [i.arg for i in FINAL if i.op == "ENTRYPOINT"]
    assert len(ep) == 1 and json.loads(ep[0]) == ["specgate"]  # exec form: signals reach specgate
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["specgate"] == "gate.cli:main"


def test_final_stage_pip_installs_the_project() -> None:
    runs = " ".join(i.arg for i in FINAL if i.op == "RUN")
    assert re.search(r'pip install "\$\{whl\}\[kube\]"', runs), runs
    assert "-e " not in runs and "--editable" not in runs
    assert "specgate --help" in runs  # the console script resolves at build time


# --- the build context --------------------------------------------------------------------------------

def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go filepath.Match plus `**`) as a regex over slash-separated paths."""
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out += ".*"
            i += 2
            if pattern.startswith("/", i):
                out += "/?"
                i += 1
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out)


def ignored(rel: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parent directories decides."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    verdict = False
    for negated, rx in rules:
        if any(rx.fullmatch(p) for p in prefixes):
            verdict = not negated
    return verdict


def ignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for line in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        negated = s.startswith("!")
        rules.append((negated, _pattern_regex(s.lstrip("!").strip("/"))))
    return rules


def context_files() -> list[str]:
    """Files docker would send: a top-level entry that is ignored and that no `!` pattern reaches into is
    not walked at all (that is how .git, .venv and .tools stay out cheaply)."""
    rules = ignore_rules()
    reopened = [rx.pattern for neg, rx in rules if neg]
    out = []
    for top in sorted(REPO.iterdir()):
        if ignored(top.name, rules) and not any(p.startswith(re.escape(top.name)) or p.startswith(".*")
                                                for p in reopened):
            continue
        paths = [top] if top.is_file() else [p for p in top.rglob("*") if p.is_file()]
        out += [p.relative_to(REPO).as_posix() for p in paths if not ignored(p.relative_to(REPO).as_posix(), rules)]
    return out


def test_dockerignore_matcher_follows_docker_semantics() -> None:
    rules = [(False, _pattern_regex("*")), (True, _pattern_regex("gate")), (False, _pattern_regex("**/__pycache__"))]
    assert ignored("tests/x.py", rules) and ignored(".venv/bin/python", rules)
    assert not ignored("gate/cli.py", rules)
    assert ignored("gate/__pycache__/cli.cpython-311.pyc", rules)


def test_build_context_holds_the_sources_and_nothing_private() -> None:
    files = context_files()
    rules = ignore_rules()
    for secret_or_big in (".git/HEAD", ".venv/pyvenv.cfg", ".tools/bin/helm", "tests/__init__.py",
                          "deploy/helm/specgate/values.yaml"):
        assert ignored(secret_or_big, rules), secret_or_big
    assert "pyproject.toml" in files and "README.md" in files
    assert "gate/cli.py" in files and "exporter/settings.py" in files
    assert any(f.startswith("exporter/replay_data/") for f in files)
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    copied = [i.arg.split() for i in STAGES[0] if i.op == "COPY"]
    sources = [src for args in copied for src in args[:-1]]
    for src in sources:
        assert (REPO / src).exists(), f"COPY {src}: not in the repository"
        assert not ignored(src, rules), f"COPY {src}: excluded by .dockerignore"


def test_build_stage_produces_the_wheel(tmp_path: Path) -> None:
    """Run the build stage's command (`pip wheel --no-deps --wheel-dir /wheels .`) on a copy of the build
    context as COPY lays it out: the wheel holds the console script and the replay captures."""
    run = [i.arg for i in STAGES[0] if i.op == "RUN"]
    assert run == ["pip wheel --no-deps --wheel-dir /wheels ."]
    ctx = tmp_path / "src"
    ctx.mkdir()
    files = set(context_files())
    for f in files:
        dest = ctx / f
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, dest)
    wheels = tmp_path / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", str(wheels), "."],
                          cwd=ctx, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        pytest.fail(f"pip wheel failed: {proc.stderr.strip()[-2000:]}")
    (whl,) = wheels.glob("specgate_llm-*.whl")  # distribution specgate-llm (pyproject.toml)
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        ep = next(n for n in names if n.endswith("entry_points.txt"))
        assert "specgate = gate.cli:main" in z.read(ep).decode()
    assert "gate/cli.py" in names and "exporter/settings.py" in names
    assert any(n.startswith("exporter/replay_data/") for n in names)
    assert not [n for n in names if n.startswith("tests/")]
