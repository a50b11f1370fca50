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


# `openenv-prime train` started without LD_PRELOAD, as a user types it: it reaches the BLAS decision and then stops
# cheaply, on a run directory that is not empty and holds no run (exit status 1, before any model loads).
CLI_ENTRIES = {
    "console script": [os.path.join(os.path.dirname(sys.executable), "openenv-prime")],
    "python -m": [sys.executable, "-m", "openenv_prime"],
}
PID_THEN_MAIN = "import os, sys; print('pid', os.getpid(), file=sys.stderr); from openenv_prime.cli import main; sys.exit(main())"
NO_OPENBLAS_THEN_MAIN = ("import sys; from openenv_prime.mlx_trainer.model import blas; blas.installed_openblas = lambda: None; "
                         "from openenv_prime.cli import main; sys.exit(main())")


def _train_without_preload(command: list[str], *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", blas.REEXEC_MARKER)}
    return subprocess.run([*command, "train", *args], env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)


@pytest.fixture
def foreign_dir(tmp_path):
    (tmp_path / "notes.txt").write_text("not a run")
    return tmp_path


@pytest.mark.skipif(not OPENBLAS, reason="Debian's libopenblas0-pthread is not installed")
@pytest.mark.parametrize("entry", sorted(CLI_ENTRIES))
def test_train_typed_without_preload_runs_on_openblas(entry, foreign_dir):
    command = CLI_ENTRIES[entry]
    if not os.path.exists(command[0]):
        pytest.skip(f"{command[0]} is not installed")
    proc = _train_without_preload(command, "--out", str(foreign_dir), "--no-progress")
    assert proc.returncode == 1, proc.stderr
    assert "note: BLAS: openblas (" in proc.stderr and f"restarted itself with LD_PRELOAD={OPENBLAS[0]}" in proc.stderr
    assert "slow reference BLAS" not in proc.stderr and "holds no openenv-prime run" in proc.stderr


@pytest.mark.skipif(not OPENBLAS, reason="Debian's libopenblas0-pthread is not installed")
def test_reexec_keeps_the_process_its_arguments_and_exit_status(foreign_dir):
    proc = _train_without_preload([sys.executable, "-c", PID_THEN_MAIN], "--out", str(foreign_dir))
    pids = [line for line in proc.stderr.splitlines() if line.startswith("pid ")]
    assert len(pids) == 2 and pids[0] == pids[1], proc.stderr  # one exec, same process: signals reach it as before
    assert proc.returncode == 1 and "note: BLAS: openblas (" in proc.stderr
    missing = _train_without_preload([sys.executable, "-c", PID_THEN_MAIN], str(foreign_dir / "missing.toml"))
    assert missing.returncode == 2 and "missing.toml does not exist" in missing.stderr
    assert len([line for line in missing.stderr.splitlines() if line.startswith("pid ")]) == 2


def test_train_without_openblas_runs_on_with_the_warning(foreign_dir):
    proc = _train_without_preload([sys.executable, "-c", NO_OPENBLAS_THEN_MAIN], "--out", str(foreign_dir))
    assert proc.returncode == 1 and "holds no openenv-prime run" in proc.stderr
    assert "slow reference BLAS" in proc.stderr and "apt-get install -y libopenblas0-pthread" in proc.stderr
    assert "restarted itself" not in proc.stderr


def _record_exec(monkeypatch) -> list:
    calls: list = []
    monkeypatch.setattr(blas.os, "execve", lambda path, argv, env: calls.append((path, argv, env)))
    monkeypatch.setattr(blas, "installed_openblas", lambda: "/usr/lib/x/libopenblas.so.0")
    monkeypatch.setattr(blas, "_global_symbol_library", lambda symbol: None)
    monkeypatch.delenv(blas.REEXEC_MARKER, raising=False)
    return calls


def test_reexec_prepends_openblas_and_marks_the_new_process(monkeypatch):
    calls = _record_exec(monkeypatch)
    monkeypatch.setenv("LD_PRELOAD", "/lib/libjemalloc.so")
    blas.reexec_with_openblas()
    [(path, argv, env)] = calls
    assert path == sys.executable and argv == [sys.executable, *sys.orig_argv[1:]]
    assert env["LD_PRELOAD"] == "/usr/lib/x/libopenblas.so.0:/lib/libjemalloc.so"
    assert env[blas.REEXEC_MARKER] == "/usr/lib/x/libopenblas.so.0"


def test_reexec_happens_at_most_once_and_only_when_it_helps(monkeypatch):
    calls = _record_exec(monkeypatch)
    monkeypatch.setenv(blas.REEXEC_MARKER, "/usr/lib/x/libopenblas.so.0")
    blas.reexec_with_openblas()  # already re-executed
    monkeypatch.delenv(blas.REEXEC_MARKER)
    monkeypatch.setattr(blas, "_global_symbol_library", lambda symbol: "/opt/libopenblas.so")
    blas.reexec_with_openblas()  # a cblas is preloaded already
    monkeypatch.setattr(blas, "_global_symbol_library", lambda symbol: None)
    monkeypatch.setattr(blas, "installed_openblas", lambda: None)
    blas.reexec_with_openblas()  # nothing faster installed
    assert calls == []


def test_in_process_calls_never_reexecute(monkeypatch, tmp_path, capsys):
    from openenv_prime.cli import main

    def refuse() -> None:
        raise AssertionError("an in-process call re-executed the process")

    monkeypatch.setattr(blas, "reexec_with_openblas", refuse)
    assert main(["train", str(tmp_path / "missing.toml")]) == 2
    assert "missing.toml does not exist" in capsys.readouterr().err
