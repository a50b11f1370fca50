"""The model never sees the gold answer of an imported verifiers task: the generated wrapper puts the whole row
(`answer` included) in the reset observation's `task_spec` and in the state, and every prompt the eval, the
verifiers taskset and the MLX trainer send the model is checked for the answer of the task it asks about (before
the hiding rule of client/prompts/hidden.py, all three failed: the answer was in the prompt's `task_spec`)."""

from __future__ import annotations

import asyncio

from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, run_eval
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.imported.helpers import oracle, request_text, sum_in
from tests.verifiers_taskset.helpers import make_env, run_episodes


def assert_no_gold_answer(prompts: list[str], expected: int) -> None:
    """Each prompt asks "A + B?" and never shows A + B (which the question itself never spells out)."""
    assert len(prompts) >= expected, f"{len(prompts)} prompts seen, expected at least {expected}"
    for prompt in prompts:
        answer = sum_in(prompt)
        assert answer is not None, f"a prompt without the task's question: {prompt[:300]!r}"
        assert answer not in prompt, f"the gold answer {answer} is in the prompt: {prompt[:600]!r}"


def test_eval_prompts_never_hold_the_gold_answer(vf_sums_server):
    model = ScriptedOpenAIServer(oracle("vf_sums_env"))
    with model as model_url:
        result = run_eval(EvalConfig(base_url=vf_sums_server, per_family=8), OpenAIPolicy(model_url, "scripted"))
    assert result.accuracy == 1.0  # the model that adds was asked every question
    assert_no_gold_answer([request_text(r) for r in model.requests], expected=8)


def test_taskset_prompts_never_hold_the_gold_answer(vf_sums_server):
    env = make_env(vf_sums_server, max_sessions=1)
    tasks = [t for t in env.taskset if t.data.split == "eval"]
    model = ScriptedOpenAIServer(oracle("vf_sums_env"))
    with model as model_url:
        episodes = asyncio.run(run_episodes(env, tasks, model_url))
    assert all(e.ok and e.traces[0].reward == 1.0 for e in episodes)
    assert_no_gold_answer([request_text(r) for r in model.requests], expected=len(tasks))


def test_trainer_prompts_never_hold_the_gold_answer(vf_sums_server, tmp_path, monkeypatch):
    from openenv_prime.mlx_trainer.config import config_from_dict
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model
    from openenv_prime.mlx_trainer.rollouts import generation, policy, runner
    from openenv_prime.mlx_trainer.training.loop import train

    prompts: list[str] = []

    def recording_generate(model, tokenizer, ids, **kwargs):
        prompts.extend(tokenizer.decode(prompt) for prompt in ids)
        return generation.generate(model, tokenizer, ids, **kwargs)

    monkeypatch.setattr(runner, "generate", recording_generate)  # training episodes
    monkeypatch.setattr(policy, "generate", recording_generate)  # the trainer's evals
    config = config_from_dict({
        "seed": 0, "steps": 2, "plot": False, "model": {"path": str(build_tiny_model(tmp_path / "tiny"))},
        "grpo": {"group_size": 2, "tasks_per_step": 2, "max_new_tokens": 8},
        "environment": {"base_url": vf_sums_server, "max_sessions": 1, "max_invalid_actions": 1},
        "eval": {"every": 2, "tasks_per_family": 2}, "checkpoint": {"every": 2},
    })
    train(config, tmp_path / "run", progress=False)
    # 2 steps x 4 episodes x (a first turn + one retry after an invalid reply), and 2 evals x 2 tasks
    assert_no_gold_answer(prompts, expected=2 * 4 + 2 * 2)
