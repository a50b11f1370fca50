"""The MLX trainer never shows the model a gold answer: a one-step run (its rollouts and its evals) on the gold server
(tests/play/gold_server.py: the answer in the task specs and in every shape we know of in observations and tool
results), with every prompt handed to generation decoded and searched for it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from openenv_prime.mlx_trainer.config import config_from_dict
from tests.play.gold_server import GOLD, TASKS, gold_in, gold_serving


@pytest.fixture(scope="module", params=["fields", "tools"])
def gold_server(request, tmp_path_factory):
    with gold_serving(request.param, tmp_path_factory.mktemp("gold")) as url:
        yield request.param, url


@pytest.fixture
def generated_from(monkeypatch):
    """The decoded prompt of every generation the trainer runs (rollouts and evals alike)."""
    import openenv_prime.mlx_trainer.rollouts.generation as generation
    import openenv_prime.mlx_trainer.training.loop  # noqa: F401  (the modules that call generate, imported before patching)
    import openenv_prime.mlx_trainer.rollouts.policy  # noqa: F401

    original, seen = generation.generate, []

    def recording(model, tokenizer, prompts, **kwargs):
        seen.extend(tokenizer.decode(prompt) for prompt in prompts)
        return original(model, tokenizer, prompts, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("openenv_prime.mlx_trainer") and getattr(module, "generate", None) is original:
            monkeypatch.setattr(module, "generate", recording)
    return seen


def _train(model: Path, url: str, run_dir: Path, **environment):
    from openenv_prime.mlx_trainer.training.loop import train

    config = config_from_dict({
        "seed": 0, "steps": 1, "plot": False, "model": {"path": str(model)},
        "grpo": {"group_size": 2, "tasks_per_step": 2, "max_new_tokens": 4},
        "environment": {"base_url": url, "family_field": "level", "train_split": "test", "test_split": "test",
                        "max_sessions": 8, "max_steps": 3, **environment},
        "eval": {"every": 0, "tasks_per_family": 1},
    })
    train(config, run_dir, progress=False)


def test_trainer_prompts_never_show_a_gold_answer(gold_server, tiny_model_dir, generated_from, tmp_path):
    kind, url = gold_server
    _train(tiny_model_dir, url, tmp_path / "run")
    assert gold_in(generated_from) == []
    # not vacuous: rollouts and evals generated from the questions, and (fields) from the observation after a step
    assert sum(any(task["question"] in prompt for task in TASKS) for prompt in generated_from) >= 4
    if kind == "fields":
        assert any("eply once more to finish" in prompt for prompt in generated_from)  # (capitals are not in the vocab)


def test_the_trainer_shows_gold_when_nothing_is_hidden(gold_server, tiny_model_dir, generated_from, tmp_path):
    """The check above can fail: the tiny model's vocabulary spells the gold answers, which an empty hidden_fields
    list lets through (the fields server shows them at once; the tools server's reset shows only its prompt)."""
    kind, url = gold_server
    if kind == "tools":
        pytest.skip("the tool results that hold gold need a valid tool call, which the random tiny model never writes")
    _train(tiny_model_dir, url, tmp_path / "run", hidden_fields=[])
    asked = [(task, prompt) for prompt in generated_from for task in TASKS if task["question"] in prompt]
    assert asked and all(GOLD[TASKS.index(task)] in prompt for task, prompt in asked)
