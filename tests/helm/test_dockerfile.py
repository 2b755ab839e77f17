"""Structure of the specgate image's Dockerfile (no docker daemon here, so no `docker build`): pinned base,
non-root numeric user that matches the chart's runAsUser, ENTRYPOINT specgate, and a build context
(.dockerignore) that holds exactly what the build stage needs — proven by running that stage's pip command
on a copy of the context."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.helm.render import REPO, default_values

DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
LOCK = REPO / "deploy" / "image" / "requirements.lock"  # `make lock`


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
    # the wheel with its kube extra, from nothing but what the lock installed (no index to fetch from)
    assert re.search(r'pip install --no-index "\$\{whl\}\[kube\]"', runs), runs
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
    copied = [i.arg.split() for stage in STAGES for i in stage
              if i.op == "COPY" and not i.arg.startswith("--from=")]
    sources = [src for args in copied for src in args[:-1]]
    assert LOCK.relative_to(REPO).as_posix() in sources and LOCK.relative_to(REPO).as_posix() in files
    for src in sources:
        assert (REPO / src).exists(), f"COPY {src}: not in the repository"
        assert not ignored(src, rules), f"COPY {src}: excluded by .dockerignore"


@pytest.fixture(scope="module")
def built_wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The build stage's command (`pip wheel --no-deps --wheel-dir /wheels .`) run on a copy of the build
    context as COPY lays it out; returns the wheel directory."""
    run = [i.arg for i in STAGES[0] if i.op == "RUN"]
    assert run == ["pip wheel --no-deps --wheel-dir /wheels ."]
    tmp = tmp_path_factory.mktemp("build-stage")
    ctx = tmp / "src"
    ctx.mkdir()
    files = set(context_files())
    for f in files:
        dest = ctx / f
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / f, dest)
    wheels = tmp / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", str(wheels), "."],
                          cwd=ctx, capture_output=True, text=True, timeout=300, check=False)
    if proc.returncode != 0:
        pytest.fail(f"pip wheel failed: {proc.stderr.strip()[-2000:]}")
    return wheels


def test_build_stage_produces_the_wheel(built_wheels: Path) -> None:
    """The wheel the build stage makes holds the console script and the replay captures."""
    (whl,) = built_wheels.glob("specgate_llm-*.whl")  # distribution specgate-llm (pyproject.toml)
    with zipfile.ZipFile(whl) as z:
        names = z.namelist()
        ep = next(n for n in names if n.endswith("entry_points.txt"))
        assert "specgate = gate.cli:main" in z.read(ep).decode()
    assert "gate/cli.py" in names and "exporter/settings.py" in names
    assert any(n.startswith("exporter/replay_data/") for n in names)
    assert not [n for n in names if n.startswith("tests/")]


# --- the dependency lock (deploy/image/requirements.lock, `make lock`) ---------------------------------

HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


def lock_entries(text: str) -> list[tuple[Requirement, list[str]]]:
    """(requirement, its hashes) per entry: continuation lines joined, comments dropped; anything else in the
    file (an option line, an entry without a hash) fails here."""
    out: list[tuple[Requirement, list[str]]] = []
    for entry in re.sub(r"\\\n", " ", text).splitlines():
        entry = entry.split(" #", 1)[0].strip() if not entry.lstrip().startswith("#") else ""
        if not entry:
            continue
        spec, *rest = entry.split()
        hashes = [h for h in rest if HASH.fullmatch(h)]
        assert rest and len(hashes) == len(rest), f"not only sha256 hashes after {spec!r}: {rest}"
        out.append((Requirement(spec), hashes))
    return out


LOCKED = lock_entries(LOCK.read_text(encoding="utf-8"))
PINS = {canonicalize_name(r.name): Version(next(iter(r.specifier)).version) for r, _ in LOCKED}
# The image's interpreter and platform, for evaluating markers: CPython 3.11 on glibc Linux.
IMAGE_ENV = {"python_version": "3.11", "python_full_version": "3.11.11", "sys_platform": "linux",
             "platform_system": "Linux", "os_name": "posix", "implementation_name": "cpython",
             "platform_python_implementation": "CPython"}


def test_lock_pins_every_requirement_exactly_with_sha256_hashes() -> None:
    assert len(LOCKED) >= 10
    for req, hashes in LOCKED:
        (spec,) = req.specifier  # exactly one specifier ...
        assert spec.operator == "==" and "*" not in spec.version, req  # ... an exact pin
        assert not req.url and not req.extras, req
        assert hashes and len(set(hashes)) == len(hashes), req
    assert len(PINS) == len(LOCKED), "a distribution is pinned twice"


def test_lock_satisfies_the_runtime_dependencies_and_the_kube_extra() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = [Requirement(r) for r in [*project["dependencies"], *project["optional-dependencies"]["kube"]]]
    assert any(canonicalize_name(r.name) == "kubernetes" for r in wanted)
    for req in wanted:
        if req.marker and not req.marker.evaluate(IMAGE_ENV):
            continue
        name = canonicalize_name(req.name)
        assert name in PINS, f"{req} is not in the lock"
        assert req.specifier.contains(PINS[name], prereleases=True), f"lock pins {name}=={PINS[name]}, wants {req}"
    assert PINS["prometheus-client"] == Version("0.26.0")  # the golden exposition files' pin
    # the lock is the image's runtime only: nothing from the test or tune extras, not specgate itself
    extras_only = {canonicalize_name(Requirement(r).name) for x in ("test", "tune") for r in project["optional-dependencies"][x]}
    extras_only -= {canonicalize_name(r.name) for r in wanted}
    assert not extras_only & PINS.keys(), extras_only & PINS.keys()
    assert canonicalize_name(project["name"]) not in PINS


def test_final_stage_installs_exactly_the_lock_with_required_hashes() -> None:
    """The lock travels into the final stage by COPY and is what pip installs with --require-hashes; every
    other pip install there can fetch nothing (--no-index)."""
    copies = [i.arg.split() for i in FINAL if i.op == "COPY" and not i.arg.startswith("--from=")]
    (dest,) = [args[-1] for args in copies if args[:-1] == [LOCK.relative_to(REPO).as_posix()]]
    run = " && ".join(i.arg for i in FINAL if i.op == "RUN")
    installs = re.findall(r"pip install [^&]*", run)
    assert installs[0].split() == ["pip", "install", "--require-hashes", "--no-deps", "--only-binary=:all:",
                                   "-r", dest]
    assert all("--no-index" in i.split() for i in installs[1:]), installs
    assert run.index("pip check") > run.index(installs[-1])
    assert run.index("specgate --help") > run.index("pip check")


def _pip_env(venv: Path) -> dict[str, str]:
    """No pip config file, index or find-links of this machine (the image has none): PyPI only."""
    keep = {"PIP_CERT", "PIP_DEFAULT_TIMEOUT"}
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("PIP_") or k in keep) and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1",
               PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    return env


def test_final_stage_run_installs_the_lock_and_finds_it_complete(built_wheels: Path, tmp_path: Path) -> None:
    """The final stage's RUN (its paths moved under tmp_path), in a fresh venv of this CPython 3.11, against
    PyPI: the hashed lock installs, the wheel with its kube extra needs nothing more (--no-index), `pip check`
    and `specgate --help` pass. Then one locked distribution is removed and the wheel's install must fail:
    the completeness check can fail. (A docker build is not run: no daemon here, and no registry but PyPI.)"""
    assert sys.version_info[:2] == (3, 11), "the image runs CPython 3.11: the lock is checked on the same"
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    lock_copy = tmp_path / "requirements.lock"
    shutil.copy2(LOCK, lock_copy)
    wheels = tmp_path / "wheels"
    shutil.copytree(built_wheels, wheels)
    (dest,) = [i.arg.split()[-1] for i in FINAL if i.op == "COPY" and LOCK.name in i.arg]
    run = " && ".join(i.arg for i in FINAL if i.op == "RUN" and "pip install" in i.arg)
    script = run.replace(dest, str(lock_copy)).replace("/wheels", str(wheels))
    paths = re.findall(r"(?<![\w.-])/[\w./*-]+", script)
    assert paths and all(p.startswith(str(tmp_path)) or p == "/dev/null" for p in paths), script  # rm -rf too
    env = _pip_env(venv)
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "No broken requirements found." in proc.stdout
    # every installed distribution is the lock's, at the lock's version (plus the venv's own pip/setuptools)
    listed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json"], env=env,
                            capture_output=True, text=True, timeout=120, check=True)
    installed = {canonicalize_name(d["name"]): Version(d["version"]) for d in json.loads(listed.stdout)}
    assert {k: v for k, v in installed.items() if k not in ("pip", "setuptools", "wheel", "specgate-llm")} == PINS
    # fail-closed: without one transitive pin the wheel's --no-index install cannot be satisfied
    leaf = "tzdata" if "tzdata" in PINS else sorted(PINS)[-1]
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y", leaf], env=env,
                   check=True, timeout=120)
    whl_install = next(c for c in script.split(" && ") if "--no-index" in c)
    # (the RUN removed its copy of the wheels, as the image's does)
    again = subprocess.run(["bash", "-c", f'whl="$(ls {built_wheels}/specgate_llm-*.whl)" && {whl_install}'], env=env,
                           capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode != 0 and leaf in again.stderr, again.stderr[-2000:]


@pytest.mark.parametrize("arch", sorted({"x86_64", "aarch64"} - {platform.machine()}))
def test_lock_has_hashed_wheels_for_the_other_image_architecture(arch: str, tmp_path: Path) -> None:
    """The image is built for x86_64 and aarch64; the install test above covers this machine's. For the other,
    pip downloads every locked wheel for CPython 3.11 on glibc Linux with --require-hashes (no markers in the
    lock, so the same pins apply)."""
    assert not [r for r, _ in LOCKED if r.marker], "markers: the architectures could resolve differently"
    platforms = [a for n in range(36, 16, -1) for a in ("--platform", f"manylinux_2_{n}_{arch}")]
    venv_env = _pip_env(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--require-hashes",
                           "--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp",
                           "--abi", "cp311", *platforms, "--platform", f"manylinux2014_{arch}",
                           "-r", str(LOCK), "-d", str(tmp_path / "dl")],
                          env=venv_env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = {canonicalize_name(p.name.split("-")[0]) for p in (tmp_path / "dl").iterdir()}
    assert got == PINS.keys()
