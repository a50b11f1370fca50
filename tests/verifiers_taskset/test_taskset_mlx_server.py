"""`vf-eval openenv-prime` against a real OpenAI-compatible server: `mlx_lm.server` serving a
tiny random model built here, with the real chain_sum server. The model's answers are noise, so the
checks are on the plumbing: every episode ends, keys and families are right, rewards are the
environment's verdict on what the model said."""

from __future__ import annotations

import os
import sys

import pytest

from tests.support.processes import free_port, serving
from tests.verifiers_taskset.test_taskset_cli_and_env_server import read_traces, vf_eval

pytestmark = pytest.mark.slow
pytest.importorskip("mlx_lm", reason="mlx_lm is not installed here (the mlx extra): no model server to evaluate")


@pytest.fixture
def mlx_server(tmp_path):
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error"}
    argv = [sys.executable, "-m", "mlx_lm", "server", "--model", str(model), "--port", str(port),
            "--max-tokens", "6", "--temp", "0.0"]
    url = f"http://127.0.0.1:{port}/v1"
    with serving(argv, f"{url}/models", tmp_path / "mlx_server.log", env=env):
        yield url


def test_vf_eval_with_mlx_lm_server_writes_traces(chain_sum_server, mlx_server, tmp_path):
    out = tmp_path / "outputs"
    done = vf_eval(
        chain_sum_server, mlx_server, out, "--env.taskset.splits", '["test"]',
        "--sampling.max-tokens", "6", "--env.taskset.max-invalid-actions", "1",
        num_tasks=4, rollouts=2, concurrency=4, shuffle=True, model="default_model",  # mlx_lm.server's name for the model it was started with
    )
    assert done.returncode == 0, done.stderr[-3000:]
    episodes = read_traces(out)
    assert len(episodes) == 8
    assert len({e["task"]["key"] for e in episodes}) == 4
    for episode in episodes:
        data = episode["task"]["data"]
        (trace,) = episode["traces"]
        assert episode["ok"], (episode["errors"], trace["errors"], trace["stop_condition"])
        assert episode["task"]["key"] == data['spec']['id'] and data['spec']['id'].startswith('chain_sum/test/')
        assert data["family"] == str(data["spec"]["tier"])
        record = trace["info"]["openenv"]
        assert trace["stop_condition"] in ("openenv_done", "openenv_invalid_action")
        assert trace["rewards"]["openenv_return"]["score"] == sum(record["rewards"])
        assert all(r in (0.0, 1.0) for r in record["rewards"])
        assert trace["calls"] and trace["calls"][0]["model"]
