"""BLAS detection, checked in fresh interpreters because LD_PRELOAD only acts at process start."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

from openenv_prime.mlx_trainer.model import blas
from tests.support.waiting import HANG_GUARD_S

OPENBLAS = sorted(glob.glob("/usr/lib/*/libopenblas.so.0"))
REPORT = "import dataclasses, json; from openenv_prime.mlx_trainer.model.blas import detect_blas; print(json.dumps(dataclasses.asdict(detect_blas())))"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the bundled reference BLAS is a Linux mlx-cpu matter")


def _detect(preload: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    if preload:
        env["LD_PRELOAD"] = preload
    out = subprocess.run([sys.executable, "-c", REPORT], env=env, capture_output=True, text=True, timeout=HANG_GUARD_S, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_without_preload_the_bundled_reference_blas_is_reported_with_the_fix():
    info = _detect(None)
    assert info["kind"] == "reference" and info["slow"] is True
    assert "mlx_cpu.libs" in info["library"] and "libblas" in info["library"]
    assert "LD_PRELOAD=" in info["fix"] and "libopenblas.so.0" in info["fix"]


@pytest.mark.skipif(not OPENBLAS, reason="Debian's libopenblas0-pthread is not installed")
def test_with_openblas_preloaded_mlx_uses_it():
    info = _detect(OPENBLAS[0])
    assert info["kind"] == "openblas" and info["slow"] is False and info["fix"] is None
    assert "openblas" in os.path.basename(info["library"])


def test_fix_installs_openblas_only_when_missing(monkeypatch):
    monkeypatch.setattr(blas.glob, "glob", lambda pattern: [])
    missing = blas.fix_command("openenv-prime train run.toml").splitlines()
    assert missing[0] == "apt-get install -y libopenblas0-pthread"
    assert missing[1].startswith("LD_PRELOAD=/usr/lib/") and missing[1].endswith("libopenblas.so.0 openenv-prime train run.toml")
    monkeypatch.setattr(blas.glob, "glob", lambda pattern: ["/usr/lib/aarch64-linux-gnu/libopenblas.so.0"])
    assert blas.fix_command("x") == "LD_PRELOAD=/usr/lib/aarch64-linux-gnu/libopenblas.so.0 x"


def test_warning_is_printed_only_for_the_slow_blas(monkeypatch):
    printed: list[str] = []
    monkeypatch.setattr(blas, "detect_blas", lambda: blas.BlasInfo("reference", "/x/libblas.so", slow=True, fix="f"))
    blas.warn_if_slow(printed.append, command="openenv-prime train c.toml")
    assert len(printed) == 1 and "slow reference BLAS" in printed[0] and "openenv-prime train c.toml" in printed[0]
    monkeypatch.setattr(blas, "detect_blas", lambda: blas.BlasInfo("openblas", "/x/libopenblas.so", slow=False, fix=None))
    blas.warn_if_slow(printed.append)
    assert len(printed) == 1


def test_matmul_gflops_is_a_positive_measurement():
    assert blas.matmul_gflops(n=64, repeats=2) > 0
