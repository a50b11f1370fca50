"""The verifiers generation is read from what verifiers has, and the eval CLI line follows it (the
other generation's line runs under scripts/check-verifiers)."""

from __future__ import annotations

import verifiers.v1 as vf

from openenv_prime.verifiers_taskset import OpenEnvTaskData
from openenv_prime.verifiers_taskset.generations import GENERATION, eval_command


def test_the_generation_is_the_installed_one_and_task_data_has_a_durable_id_in_it() -> None:
    assert GENERATION == ("0.4" if "id" in vf.TaskData.model_fields else "pinned")
    data = OpenEnvTaskData(env_name="e", split="test", index=3, spec={}, id="e/test/7")
    assert data.id == "e/test/7" and issubclass(OpenEnvTaskData, vf.TaskData)


def test_each_generation_gets_its_own_eval_line() -> None:
    common = dict(model="m", model_base_url="http://127.0.0.1:8080/v1", output_dir="out", run_name="r",
                  num_tasks=20, rollouts=2, concurrency=8, shuffle=True)
    new = eval_command(generation="0.4", **common)
    pinned = eval_command(generation="pinned", **common)
    tail = ["-m", "m", "--client.base-url", "http://127.0.0.1:8080/v1", "--no-push", "-o", "out", "--run.name", "r"]
    assert new == ["vf-eval", "openenv-prime", *tail, "-n", "20", "-r", "2", "-c", "8", "-s"]
    assert pinned == ["eval", "openenv-prime", *tail, "--no-serve", "-n", "20", "-r", "2", "-c", "8", "-s"]
    assert "--no-serve" not in eval_command(generation="pinned", in_process=False, **common)
