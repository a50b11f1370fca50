"""The taskset through verifiers' own entry points: the v1 eval CLI (`vf-eval` in verifiers 0.4,
`eval` in prime-rl's pinned generation) and the zmq env server (the path prime-rl's orchestrator
uses), against real servers."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from verifiers.v1.serve.client import EnvClient
from verifiers.v1.serve.server import EnvServer
from verifiers.v1.utils.loaders import resolve_env_config

from openenv_prime.verifiers_taskset.generations import eval_command
from tests.support.waiting import HANG_GUARD_S
from tests.verifiers_taskset.conftest import CORRECT_TIERS
from tests.verifiers_taskset.helpers import MODEL


def vf_eval(
    openenv_url: str, model_url: str, out: Path, *extra: str, model: str = MODEL, **options: Any
) -> subprocess.CompletedProcess:
    """The installed generation's eval CLI, with `options` as `eval_command` takes them."""
    program, *args = eval_command(model=model, model_base_url=model_url, output_dir=str(out), run_name="run", **options)
    command = [
        str(Path(sys.executable).with_name(program)), *args, "--no-rich", "--env.taskset.base-url", openenv_url, *extra,
    ]
    env = {**os.environ, "PRIME_API_KEY": "", "HF_HUB_OFFLINE": "1"}
    return subprocess.run(command, capture_output=True, text=True, timeout=HANG_GUARD_S, env=env, cwd=out.parent)


def read_traces(out: Path) -> list[dict]:
    lines = (out / "run" / "traces.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_vf_eval_writes_traces_with_keys_families_and_rewards(chain_sum_server, scripted_model, tmp_path):
    out = tmp_path / "outputs"
    done = vf_eval(
        chain_sum_server, scripted_model.url, out,
        "--env.taskset.splits", '["test"]', num_tasks=10, rollouts=2, concurrency=8, shuffle=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    episodes = read_traces(out)
    assert len(episodes) == 20
    assert len({e["task"]["key"] for e in episodes}) == 10
    for episode in episodes:
        data = episode["task"]["data"]
        (trace,) = episode["traces"]
        assert episode["ok"] and episode["task"]["key"] == data['spec']['id'] and data['spec']['id'].startswith('chain_sum/test/')
        assert data["family"] == str(data["spec"]["tier"])
        expected = 1.0 if int(data["family"]) in CORRECT_TIERS else 0.0
        assert trace["rewards"]["openenv_return"]["score"] == expected
        assert trace["info"]["openenv"]["rewards"] == [expected]
        assert trace["stop_condition"] == "openenv_done"
    # Shuffled with a seed: not just the first ten tasks, which are all tier 0.
    assert len({e["task"]["data"]["family"] for e in episodes}) > 1


def test_env_server_runs_dispatched_tasks(chain_sum_server, chain_sum_tasks, scripted_model):
    config = resolve_env_config(
        {"taskset": {"id": "openenv-prime", "base_url": chain_sum_server, "splits": ["test"]}}
    )
    server = EnvServer(config, address="tcp://127.0.0.1:0")
    tasks = [chain_sum_tasks[0], chain_sum_tasks[-1]]  # tier 0 (right) and tier 4 (wrong)

    async def dispatch() -> list:
        serving = asyncio.create_task(server.run())
        client = EnvClient(server.address)
        try:
            await client.wait_for_server_startup(timeout=HANG_GUARD_S)
            model = vf.EvalClientConfig(base_url=scripted_model.url, api_key_var="OPENENV_PRIME_TEST_KEY")
            return await asyncio.gather(*(
                client.run(model, MODEL, vf.SamplingConfig(), task.data.model_dump(mode="json"))
                for task in tasks
            ))
        finally:
            await client.close()
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)

    episodes = asyncio.run(asyncio.wait_for(dispatch(), timeout=HANG_GUARD_S))
    assert [e.task.key for e in episodes] == [t.key for t in tasks]
    assert [e.traces[0].reward for e in episodes] == [1.0, 0.0]
    assert all(e.ok and e.traces[0].stop_condition == "openenv_done" for e in episodes)
