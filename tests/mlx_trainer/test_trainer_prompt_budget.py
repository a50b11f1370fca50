"""The prompt budget in the MLX trainer, on the coding_env-like server (tests/play/coding_server.py) whose every failing
program returns a long traceback: when older turns are left out, the shorter prompt starts a new token sequence, so
every reply is trained in exactly the context it was generated in, and no prompt exceeds the budget; a 2-step run
trains on such episodes."""

from __future__ import annotations

import string
import sys
from pathlib import Path

import pytest

from trainer_helpers import read_log

from openenv_prime.client.engine.episode_rules import EpisodeRules
from openenv_prime.client.prompts.budget import prompt_size
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.mlx_trainer.config import config_from_dict
from openenv_prime.mlx_trainer.rollouts.generation import Completion
from openenv_prime.mlx_trainer.rollouts.runner import EpisodeRunner, Renderer
from openenv_prime.mlx_trainer.training.loop import train
from openenv_prime.mlx_trainer.worker import MainThreadMLX
from openenv_prime.samplers.task import Task
from tests.play.coding_server import PROGRAMS, TASKS
from tests.support.processes import free_port, serving

CODING = Path(__file__).resolve().parents[1] / "play" / "coding_server.py"
BUDGET = 8000
FAILING = "raise RuntimeError('it failed: ' + 'no luck ' * 150)"  # a traceback of about 1,300 characters


@pytest.fixture(scope="module")
def coding_server(tmp_path_factory):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("coding") / "server.log"
    with serving([sys.executable, str(CODING), str(port), "16"], f"{url}/health", log):
        yield url


@pytest.fixture(scope="module")
def printable_model_dir(tmp_path_factory):
    """A tiny random model whose tokenizer knows every printable character, so a traceback reads back as it was."""
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model

    vocab = string.ascii_letters + string.digits + string.punctuation + " \n"
    return build_tiny_model(tmp_path_factory.mktemp("models") / "printable", vocab=vocab)


def test_a_cut_prompt_starts_a_new_sequence_and_every_reply_trains_in_the_context_it_was_generated_in(
        printable_model_dir, coding_server):
    from mlx_lm import load

    from openenv_prime.client import TaskAPIClient

    model, tokenizer = load(str(printable_model_dir))
    with TaskAPIClient(coding_server) as api:
        schema = api.action_schema()
    prompted: list[tuple[int, ...]] = []
    eos = sorted(tokenizer.eos_token_ids)[0]

    def scripted(model, tokenizer, prompts, **_):
        prompted.extend(tuple(p) for p in prompts)
        return [Completion(tokenizer.encode(FAILING, add_special_tokens=False) + [eos], FAILING, True) for _ in prompts]

    mlx = MainThreadMLX()
    renderer = Renderer(tokenizer, "Solve the task.", action_schema=schema, settings=PromptSettings(prompt_budget=BUDGET))

    async def go():
        runner = EpisodeRunner(model, renderer, mlx, coding_server, max_sessions=8, max_new_tokens=64, temperature=1.0,
                               rules=EpisodeRules(max_steps=12, max_invalid_actions=12), generator=scripted)
        try:
            return (await runner.play([Task("test", 0, "1"), Task("test", 2, "2")], 2, step=1)).groups
        finally:
            await runner.close()

    rollouts = [r for group in mlx.drive(go()) for r in group]
    assert len(rollouts) == 4 and all(r.steps == 12 for r in rollouts)
    starts = []
    for rollout in rollouts:
        assert len(rollout.sequences) > 1  # 12 tracebacks do not fit in 8,000 characters
        for n, sequence in enumerate(rollout.sequences):
            mask = sequence.model_mask
            replies = [i for i in range(1, len(mask)) if mask[i] == 1.0 and mask[i - 1] == 0.0]
            starts += [tuple(sequence.tokens[:i]) for i in replies]
            # the messages before each reply are a prompt the model was asked with: within the budget, the task first
            # (the sequence's own replies are its last ones: a later sequence's prompt holds earlier replies as text)
            own = [i for i, m in enumerate(sequence.messages) if m["role"] == "assistant"][-len(replies):]
            assert all(prompt_size(sequence.messages[:i]) <= BUDGET for i in own)
            first = sequence.messages[1]["content"]
            assert first.startswith("Print ") and (("earlier turns left out]" in first) == (n > 0))
    # each reply is trained on the very tokens it was generated from, and every generated reply is trained
    assert sorted(starts) == sorted(prompted)


def test_two_training_steps_train_every_sequence_of_a_cut_episode_with_its_advantage(
        printable_model_dir, coding_server, tmp_path, monkeypatch):
    from openenv_prime.mlx_trainer.rollouts import runner
    from openenv_prime.mlx_trainer.training import grpo

    def scripted(model, tokenizer, prompts, **_):
        """The first open episode of each round keeps failing; the others print the answer."""
        eos = sorted(tokenizer.eos_token_ids)[0]
        texts = [FAILING if j == 0 else PROGRAMS[_task(tokenizer.decode(p))] for j, p in enumerate(prompts)]
        return [Completion(tokenizer.encode(t, add_special_tokens=False) + [eos], t, True) for t in texts]

    batches = []
    make_batch = grpo.make_batch

    def recording_make_batch(sequences, advantages, *args, **kwargs):
        batches.append(list(advantages))
        return make_batch(sequences, advantages, *args, **kwargs)

    monkeypatch.setattr(runner, "generate", scripted)
    monkeypatch.setattr(grpo, "make_batch", recording_make_batch)
    config = config_from_dict({
        "seed": 0, "steps": 2, "plot": False, "model": {"path": str(printable_model_dir)},
        "lora": {"rank": 4, "scale": 20.0, "layers": -1},
        "grpo": {"group_size": 2, "tasks_per_step": 1, "max_new_tokens": 64, "learning_rate": 3e-4},
        "sampler": {"name": "uniform"},
        "environment": {"base_url": coding_server, "family_field": "tier", "train_split": "test", "max_sessions": 8,
                        "max_steps": 6, "max_invalid_actions": 6, "observation_budget": 2000, "prompt_budget": 4000},
        "eval": {"enabled": False},
        "checkpoint": {"every": 100},
    })
    train(config, tmp_path / "run", progress=False)
    steps = [line for line in read_log(tmp_path / "run") if line["type"] == "step"]
    assert len(steps) == 2 and all(s["groups_with_signal"] == 1 for s in steps)
    # one group a step: the failing episode (6 steps, cut into several sequences) and the one solved at once
    for advantages in batches:
        assert len(advantages) > 2 and advantages.count(advantages[-1]) == 1
        assert set(advantages[:-1]) == {advantages[0]} and advantages[0] < 0 < advantages[-1]


def _task(prompt: str) -> int:
    return next(i for i, task in enumerate(TASKS) if task["prompt"] in prompt)
