"""One process of a TRL run fails; every process stops, saying why. processes_run.py breaks process 1 alone (its
environment sessions, the user's score, or its share of an eval), and both processes must exit non-zero quoting
process 1's error: each kind with the processes started by hand (no elastic agent to stop the process left waiting:
it must learn of the failure at the collective it waits in), and one under torchrun."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.processes import free_port
from tests.trl_integration.test_trl_processes import SCRIPT, launch

BROKEN = {
    "session": ("scoring the generation batch", "ServerUnreachableError"),
    "score": ("scoring the generation batch", "the user's score broke on process 1 (scripted)"),
    "eval": ("the eval failed on process 1 of 2", "ServerUnreachableError"),
}


def by_hand(url: str, out, *options: str) -> list[str]:
    """processes_run.py as two processes started one by one (RANK, WORLD_SIZE, MASTER_ADDR set), as a scheduler
    without torchrun's agent would; each process's output, once both have exited non-zero."""
    port = str(free_port())
    procs = []
    for rank in (0, 1):
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
               "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_WORLD_SIZE": "2"}
        procs.append(subprocess.Popen([sys.executable, str(SCRIPT), "--url", url, "--out", str(out), *options],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
    outputs = [proc.communicate(timeout=600)[0] for proc in procs]
    for rank, proc in enumerate(procs):
        assert proc.returncode != 0, f"process {rank} did not fail:\n{outputs[rank][-3000:]}"
    return outputs


def failure_options(kind: str) -> list[str]:
    return ["--fail", kind, "--steps", "2", "--eval-every", "2" if kind == "eval" else "0"]


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_failure_on_process_1_stops_both_processes_started_by_hand_with_its_message(chain_sum_server, tmp_path, kind):
    where, message = BROKEN[kind]
    outputs = by_hand(chain_sum_server, tmp_path, *failure_options(kind))
    for output in outputs:
        assert where in output and message in output  # process 0 quotes process 1's error, not a transport error
        assert "Connection closed by peer" not in output
    assert not list(tmp_path.glob("process-*.json"))


def test_a_failure_on_process_1_under_torchrun_is_told_by_process_0(chain_sum_server, tmp_path):
    """Under torchrun too (its agent would stop process 0 anyway): process 0 says why, quoting process 1. One kind
    here; the three run above, where no agent stops anyone."""
    where, message = BROKEN["score"]
    kind = "score"
    output = launch(2, chain_sum_server, tmp_path, *failure_options(kind), fails=True)
    told = [line for line in output.splitlines() if line.startswith("[rank0]:") and where in line]
    assert told and message in told[-1]

