"""Session fixtures: the pinned helm binary (installed by tools/install_helm.sh when missing) and one
`helm template` per (values case, monitoring API present or not)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helm.render import (
    CASES,
    HOOK_CASES,
    INSTALL_SCRIPT,
    TOOLS_BIN,
    Rendered,
    deep_merge,
    default_values,
    parse_objects,
    template,
    write_values,
)


@pytest.fixture(scope="session")
def helm() -> Path:
    """The pinned helm in .tools/bin. The script is idempotent: it only downloads when the binary is
    missing or its sha256 differs from the pin."""
    proc = subprocess.run(["bash", str(INSTALL_SCRIPT), str(TOOLS_BIN)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, f"tools/install_helm.sh failed: {proc.stderr.strip()}"
    return TOOLS_BIN / "helm"


@pytest.fixture(scope="session")
def rendered(helm: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, bool], Rendered]:
    """Every case of the matrix, rendered once per session by the real helm."""
    defaults = default_values()
    out: dict[tuple[str, bool], Rendered] = {}
    for case, values in CASES.items():
        vfile = write_values(tmp_path_factory.mktemp(f"values-{case}"), values)
        for api in (False, True):
            proc = template(helm, vfile, api)
            assert proc.returncode == 0, f"helm template {case} (api={api}) failed: {proc.stderr.strip()}"
            out[(case, api)] = Rendered(case, api, deep_merge(defaults, values), parse_objects(proc.stdout))
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """`render_key` parametrizes a test over every (case, api) pair; `case_name` over cases only."""
    if "render_key" in metafunc.fixturenames:
        keys = [(c, a) for c in CASES for a in (False, True)]
        metafunc.parametrize("render_key", keys, ids=[f"{c}-{'api' if a else 'noapi'}" for c, a in keys])
    if "case_name" in metafunc.fixturenames:
        metafunc.parametrize("case_name", list(CASES))
    if "hook_key" in metafunc.fixturenames:
        keys = [(c, a) for c in HOOK_CASES for a in (False, True)]
        metafunc.parametrize("hook_key", keys, ids=[f"{c}-{'api' if a else 'noapi'}" for c, a in keys])


@pytest.fixture
def hook_r(rendered: dict[tuple[str, bool], Rendered], hook_key: tuple[str, bool]) -> Rendered:
    """A rendered case whose values enable a drafter and the gate hook."""
    return rendered[hook_key]


@pytest.fixture
def r(rendered: dict[tuple[str, bool], Rendered], render_key: tuple[str, bool]) -> Rendered:
    return rendered[render_key]
