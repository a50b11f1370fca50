"""Multi-turn GRPO against a real multi-step OpenEnv server (the toy environment in a subprocess): episodes
run until done or max_steps with every turn generated in one batch, the loss sees the replies only, invalid
actions are fed back and counted, missing rewards are left out, and a tiny model learns a two-step task."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainer_helpers import SMALL_VOCAB, RecordingSampler, format_sft_model, read_log, toy_server

from openenv_prime.client.engine.episode_rules import EpisodeRules
from openenv_prime.mlx_trainer.config import config_from_dict
from openenv_prime.mlx_trainer.rollouts.runner import EpisodeRunner, Renderer
from openenv_prime.mlx_trainer.training.loop import train
from openenv_prime.mlx_trainer.worker import MainThreadMLX
from openenv_prime.samplers.task import Task


@pytest.fixture(scope="module")
def sft_two_step(tmp_path_factory):
    """A tiny small-vocabulary model after format SFT on both prompts of the two-step task."""
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model

    root = tmp_path_factory.mktemp("two-step-models")
    base = build_tiny_model(root / "base", vocab=SMALL_VOCAB, seed=0)
    return format_sft_model(base, root / "sft", ["say 7:", "say 8:"], steps=30, seed=0)


@pytest.fixture(scope="module")
def two_step_server():
    with toy_server("2") as (url, _):
        yield url


def play(model_dir: Path, url: str, tasks: list[Task], group_size: int, rules: EpisodeRules, max_new_tokens: int):
    """One step's groups played by the runner itself; returns (rollouts, tokenizer)."""
    from mlx_lm import load

    from openenv_prime.client import TaskAPIClient

    model, tokenizer = load(str(model_dir))
    with TaskAPIClient(url) as api:
        schema = api.action_schema()
    mlx = MainThreadMLX()

    async def go():
        runner = EpisodeRunner(model, Renderer(tokenizer, observation_field="question", action_schema=schema), mlx, url, max_sessions=64,
                               max_new_tokens=max_new_tokens, temperature=1.0, rules=rules)
        try:
            return (await runner.play(tasks, group_size, step=1)).groups
        finally:
            await runner.close()

    return mlx.drive(go()), tokenizer


def segments(tokens: list[int], mask: list[float], value: float) -> list[list[int]]:
    """Maximal runs of tokens whose mask equals ``value``."""
    runs, current = [], []
    for t, m in zip(tokens, mask):
        if m == value:
            current.append(t)
        elif current:
            runs.append(current)
            current = []
    return runs + ([current] if current else [])


def test_two_step_episodes_send_each_reply_and_train_only_the_replies(sft_two_step, two_step_server):
    tasks = [Task("train", i, "2") for i in range(4)]
    groups, tok = play(sft_two_step, two_step_server, tasks, 8, EpisodeRules(max_steps=4, max_invalid_actions=1), 3)
    rollouts = [r for g in groups for r in g]
    assert len(groups) == 4 and all(len(g) == 8 for g in groups)
    checked = 0
    for r in rollouts:
        assert r.turns == r.steps + r.invalid_actions
        (t,) = r.sequences  # short episodes: never cut by the prompt budget
        assert sum(t.completion_mask) == r.generated_tokens == sum(len(s) for s in segments(t.completion, t.completion_mask, 1.0))
        assert r.steps <= 2 and (r.done == (r.steps == 2))
        replies = [tok.decode([i for i in s if i not in tok.eos_token_ids]) for s in segments(t.completion, t.completion_mask, 1.0)]
        between = [tok.decode(s) for s in segments(t.completion, t.completion_mask, 0.0)]
        if r.invalid_actions == 0 and r.steps == 2:
            # what the server saw is what the sequence holds: its reward is the share of right replies
            assert r.reward == ((replies[0] == "7") + (replies[1] == "8")) / 2
            assert any("say 8:" in text for text in between)  # the second observation, masked out
            checked += 1
    assert checked >= 8


def test_invalid_actions_are_fed_back_and_counted(tiny_model_dir):
    with toy_server("0") as (url, _):  # the server rejects answers longer than 3 characters
        groups, tok = play(tiny_model_dir, url, [Task("train", 0, "0"), Task("train", 1, "0")], 8,
                           EpisodeRules(max_steps=4, max_invalid_actions=1), 8)
    rollouts = [r for g in groups for r in g]
    invalid = [r for r in rollouts if r.invalid_actions > 0]
    assert invalid, "the random model should write over-long answers"
    for r in rollouts:
        assert r.turns == r.steps + r.invalid_actions and r.invalid_actions <= 2
        (t,) = r.sequences
        between = [tok.decode(s) for s in segments(t.completion, t.completion_mask, 0.0)]
        # each invalid reply within the limit is answered with feedback (the tiny vocabulary has no capitals)
        assert sum("reply with only the action" in text for text in between) == min(r.invalid_actions, 1)
        if r.invalid_actions == 2:  # past max_invalid_actions: the episode ends unscored by the server
            assert r.steps == 0 and r.reward == 0.0


def make_config(model: Path, url: str, **over):
    data = {
        "seed": 0, "steps": 2, "plot": False, "model": {"path": str(model)},
        "lora": {"rank": 8, "scale": 20.0, "layers": -1},
        "grpo": {"group_size": 8, "tasks_per_step": 8, "max_new_tokens": 3, "learning_rate": 3e-4},
        "sampler": {"name": "uniform"},
        "environment": {"base_url": url, "family_field": "level", "max_sessions": 64, "observation_field": "question"},
        "eval": {"enabled": False},
        "checkpoint": {"every": 100},
    }
    for key, value in over.items():
        data[key] = {**data[key], **value} if isinstance(data.get(key), dict) else value
    return config_from_dict(data)


@pytest.mark.slow
def test_tiny_model_learns_a_two_step_task(sft_two_step, two_step_server, tmp_path):
    cfg = make_config(sft_two_step, two_step_server, steps=16, environment={"max_steps": 2})
    train(cfg, tmp_path / "run", progress=False)
    steps = [s for s in read_log(tmp_path / "run") if s["type"] == "step"]
    rewards = [s["reward"] for s in steps]
    first, last = sum(rewards[:4]) / 4, sum(rewards[-4:]) / 4
    assert last > first + 0.15, rewards
    assert all(s["env_steps"] > 1.2 and s["unscored_episodes"] == 0 for s in steps)  # two steps, scored at the end


def test_unscored_episodes_are_left_out_never_zero_and_per_key_metrics_are_capped(sft_two_step, tmp_path):
    recorded = []

    def wrap(sampler):
        recorded.append(RecordingSampler(sampler))
        return recorded[-1]

    with toy_server("0,3") as (url, _):  # family 3 never pays a reward
        cfg = make_config(sft_two_step, url, sampler={"name": "uniform", "log_keys": 1})
        train(cfg, tmp_path / "run", sampler_wrapper=wrap, progress=False)
    updates = recorded[0].updates
    drawn = [t for draws in recorded[0].draws for t in draws]
    assert any(index >= 20 for _, index in drawn), "family 3 (indices 20-39) should have been drawn"
    assert updates and {key for key, _, _ in updates} == {"0"}  # family 3 never reached the sampler as zeros
    steps = [s for s in read_log(tmp_path / "run") if s["type"] == "step"]
    assert sum(s["groups_unscored"] for s in steps) == sum(1 for _, i in drawn if i >= 20)
    assert all(s["family_reward"].keys() <= {"0"} for s in steps)
    for s in steps:
        per_key = {k.split("/")[1] for k in s["sampler"] if k.startswith("key/")}
        assert s["sampler"]["keys_total"] == 2 and s["sampler"]["keys_logged"] == 1 and len(per_key) == 1


def test_task_list_drives_a_server_without_a_task_api(sft_two_step, tmp_path):
    import json

    from openenv_prime.client import TaskAPIClient
    from openenv_prime.client.wire.errors import OpenEnvError

    lines = [{"split": "train", "id": f"two-{s}", "level": 2, "reset": {"level": 2, "seed": s}} for s in range(4)]
    lines += [{"split": "test", "id": f"t-{level}", "level": level, "reset": {"level": level}} for level in (0, 2)]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with toy_server("0", task_api=False) as (url, _):
        with TaskAPIClient(url) as api, pytest.raises(OpenEnvError):
            api.get_task_range("train")  # the server itself lists no tasks
        cfg = make_config(sft_two_step, url, steps=1, grpo={"tasks_per_step": 2},
                          environment={"tasks": str(tasks), "max_steps": 4},
                          eval={"enabled": True, "every": 0, "tasks_per_family": 2})
        result = train(cfg, tmp_path / "run", progress=False)
    log = read_log(tmp_path / "run")
    step = next(line for line in log if line["type"] == "step")
    # the default reset (level 0) would be one step: two steps mean each episode reset with its line's arguments
    assert step["env_steps"] > 1.2 and step["family_reward"].keys() <= {"2"}
    assert [e["n"] for e in result.state.evals] == [{"0": 1, "2": 1}] * 2


def test_cli_trains_on_a_multi_step_environment(sft_two_step, two_step_server, tmp_path):
    import subprocess
    import sys

    from openenv_prime.mlx_trainer.config import dump_toml

    path = tmp_path / "config.toml"
    path.write_text(dump_toml(make_config(sft_two_step, two_step_server, steps=2, grpo={"tasks_per_step": 2},
                                          environment={"max_steps": 2})))
    proc = subprocess.run([sys.executable, "-m", "openenv_prime", "train", str(path), "--out", str(tmp_path / "run"),
                           "--no-progress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "done: 2 steps, 32 episodes" in proc.stdout
    steps = [s for s in read_log(tmp_path / "run") if s["type"] == "step"]
    assert len(steps) == 2 and all(s["env_steps"] > 1.2 and s["turns"] >= s["env_steps"] for s in steps)


def test_a_server_that_ignores_the_task_lists_reset_arguments_is_refused_before_training(sft_two_step, tmp_path):
    import json

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"level": 2, "reset": {"level": 2, "seed": s}}) + "\n" for s in range(3)))
    with toy_server("0") as (url, _):  # its reset takes split/index and drops `level`: it plays level 0
        cfg = make_config(sft_two_step, url, environment={"tasks": str(tasks)})
        with pytest.raises(ValueError, match="does not play the task it is asked for"):
            train(cfg, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def test_a_server_admitting_fewer_sessions_than_asked_for_plays_in_smaller_waves(sft_two_step, tmp_path):
    with toy_server("2", max_sessions=3) as (url, _):  # the trainer would like 16 sockets
        cfg = make_config(sft_two_step, url, steps=1, grpo={"group_size": 4, "tasks_per_step": 4},
                          environment={"max_sessions": 16}, eval={"enabled": True, "every": 0, "tasks_per_family": 2})
        result = train(cfg, tmp_path / "run", progress=False)
    assert result.state.step == 1 and result.state.episodes == 16
    step = next(s for s in read_log(tmp_path / "run") if s["type"] == "step")
    assert step["env_steps"] > 1.2
