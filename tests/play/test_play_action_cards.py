"""Environments shaped like tbench2_env and finrl_env (tests/play/bench_envs.py): by default the field that selects
the action (`action_type`, with its legal values) and the command are offered, so a policy that reads only the prompt
scores; an action card given to eval, the verifiers taskset, the MLX trainer and TRL changes the prompt and the
action sent (the server logs every action it receives); finrl's prompt says what its state's numbers are, and a
reply of the wrong length is the model's to learn from; `openenv-prime inspect` prints the format and writes a card."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from openenv_prime.evaluation import EvalConfig, run_eval
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.play.bench_envs import WORDS
from tests.play.reader import Reader
from tests.support.waiting import HANG_GUARD_S

ROOT = Path(__file__).resolve().parents[2]
LEVEL = {"family_field": "level", "check_reset": False}
SHELL_CARD = """\
about = "Work in the task's shell: your whole reply is one shell command, run at once."
[fields.command]
description = "the shell command to run"
[fixed]
action_type = "exec"
"""


def tbench_reader(prompt: list[dict]) -> str:
    """Writes the file the task asks for with the value the prompt gives for running a command, then evaluates with
    the value the prompt gives for running the tests."""
    system = prompt[0]["content"]
    values = re.search(r'"action_type" \(string, one of ((?:"\w+"(?:, )?)+)', system).group(1)
    run, tests = (re.search(rf'"(\w+)" \({words}', system).group(1) for words in ("run the command", "run the task"))
    assert f'"{run}"' in values and f'"{tests}"' in values and '"command"' in system
    if len(prompt) <= 2:
        word = re.search(r"holding the word (\w+)", prompt[1]["content"]).group(1)
        return json.dumps({"action_type": run, "command": f"echo {word} > answer.txt"})
    return json.dumps({"action_type": tests})


@pytest.fixture(scope="module")
def bench(play_servers, tmp_path_factory):
    """(url, the server's action log) of each environment, started once for this module."""
    logs = tmp_path_factory.mktemp("actions")

    def get(name: str) -> tuple[str, Path]:
        log = logs / f"{name}.jsonl"
        return play_servers("bench_envs.py", "0.4.1", name, str(log)), log
    return get


def sent_since(log: Path, start: int) -> list[dict]:
    lines = log.read_text().splitlines() if log.exists() else []
    return [json.loads(line) for line in lines[start:]]


def count(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_action_type_and_command_are_offered_by_default_so_the_prompt_reader_scores(bench):
    url, log = bench("tbench")
    start = count(log)
    reader = Reader(tbench_reader)
    result = run_eval(EvalConfig(base_url=url, per_family=2, max_steps=4, **LEVEL), reader)
    assert [(r.stop, r.reward, r.invalid_actions) for r in result.results] == [("done", 1.0, 0)] * 4
    sent = sent_since(log, start)
    assert {a["action_type"] for a in sent} == {"exec", "evaluate"} and all(a["block"] is True for a in sent)
    assert "session_id" in reader.prompts[0][0]["content"] and "file_path" not in reader.prompts[0][0]["content"]


def test_an_action_card_given_to_eval_changes_the_prompt_and_the_action_sent(bench, tmp_path):
    url, log = bench("tbench")
    card = tmp_path / "card.toml"
    card.write_text(SHELL_CARD)
    start = count(log)
    reader = Reader(lambda prompt: f"echo {WORDS[0]} > answer.txt")
    run_eval(EvalConfig(base_url=url, per_family=1, families=["0"], max_steps=2, action_card=str(card), **LEVEL), reader)
    system = reader.prompts[0][0]["content"]
    assert "your whole reply is one shell command" in system and "`command` field: the shell command to run" in system
    assert "action_type" not in system and "session_id" not in system
    assert sent_since(log, start) == [{"action_type": "exec", "command": f"echo {WORDS[0]} > answer.txt",
                                       "session_id": None, "block": True, "wait_seconds": None, "file_path": "",
                                       "content": ""}] * 2


def test_eval_and_inspect_take_a_card_on_the_command_line_and_a_bad_one_is_refused(bench, tmp_path):
    url, _ = bench("tbench")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    written = tmp_path / "inferred.json"
    shown = subprocess.run([sys.executable, "-m", "openenv_prime", "inspect", "--base-url", url, "--write-card",
                            str(written)], capture_output=True, text=True, timeout=HANG_GUARD_S, env=env, cwd=ROOT)
    assert shown.returncode == 0, shown.stderr
    assert 'action_type (string, one of "exec", "view", "evaluate"' in shown.stdout
    assert "held as settings (the server's default): block = true, file_path = \"\", content = \"\"" in shown.stdout
    assert 'example reply: {"action_type": "exec", "command": "..."}' in shown.stdout
    card = json.loads(written.read_text())
    assert card["fields"]["action_type"]["values"] == ["exec", "view", "evaluate"]
    (tmp_path / "bad.toml").write_text(SHELL_CARD.replace('action_type = "exec"', 'action = "exec"'))
    with ScriptedOpenAIServer(lambda request: "ls") as model_url:
        run = subprocess.run([sys.executable, "-m", "openenv_prime", "eval", "--base-url", url, "--model", "scripted",
                              "--model-base-url", model_url, "--family-field", "level", "--per-family", "1",
                              "--no-reset-check", "--out", str(tmp_path / "r.json"), "--action-card",
                              str(tmp_path / "bad.toml")],
                             capture_output=True, text=True, timeout=HANG_GUARD_S, env=env, cwd=ROOT)
    assert run.returncode != 0 and "--action-card" in run.stderr and "['action']" in run.stderr, run.stderr


def test_an_action_card_given_to_the_verifiers_taskset_changes_the_prompt_and_the_action_sent(bench, tmp_path):
    from openenv_prime.verifiers_taskset import OpenEnvTaskset, OpenEnvTasksetConfig
    from tests.verifiers_taskset.helpers import make_env, run_episodes, system_text

    url, log = bench("tbench")
    card = tmp_path / "card.toml"
    card.write_text(SHELL_CARD)
    tasks = list(OpenEnvTaskset(OpenEnvTasksetConfig(id="openenv-prime", base_url=url, splits=["test"])))[:2]
    env = make_env(url, splits=["test"], action_card=str(card), max_steps=1)
    start = count(log)
    model = ScriptedOpenAIServer(lambda request: "echo hi > note.txt")
    with model as model_url:
        episodes = asyncio.run(run_episodes(env, tasks, model_url))
    assert len(episodes) == 2 and len(model.requests) == 2
    system = system_text(model.requests[0])
    assert "your whole reply is one shell command" in system and "action_type" not in system
    assert sent_since(log, start) == [{"action_type": "exec", "command": "echo hi > note.txt", "session_id": None,
                                       "block": True, "wait_seconds": None, "file_path": "", "content": ""}] * 2


def test_an_action_card_given_to_the_mlx_trainer_changes_the_prompt_and_the_action_sent(bench, tmp_path):
    from openenv_prime.mlx_trainer.config import config_from_dict
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model
    from openenv_prime.mlx_trainer.training.loop import train

    url, log = bench("tbench")
    card = tmp_path / "card.toml"
    card.write_text(SHELL_CARD)
    start = count(log)
    config = config_from_dict({
        "seed": 0, "steps": 1, "plot": False, "model": {"path": str(build_tiny_model(tmp_path / "tiny"))},
        "grpo": {"group_size": 2, "tasks_per_step": 2, "max_new_tokens": 4},
        "environment": {"base_url": url, "train_split": "test", "test_split": "test", "action_card": str(card),
                        "max_steps": 1, **LEVEL},
        "eval": {"every": 1, "tasks_per_family": 1}, "checkpoint": {"every": 1},
    })
    train(config, tmp_path / "run", progress=False)
    sent = sent_since(log, start)
    assert len(sent) >= 4 and all(a["action_type"] == "exec" and a["block"] is True for a in sent)
    episodes = (tmp_path / "run" / "episodes.jsonl").read_text()
    assert "your whole reply is one shell command" in episodes and "session_id" not in episodes


def test_an_action_card_given_to_trl_changes_the_prompt_and_the_action_sent(bench, tmp_path):
    pytest.importorskip("trl", reason="TRL is not installed (the `trl` extra)")
    from trl import GRPOTrainer

    from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig
    from tests.trl_integration.tiny import grpo_args, tiny_model, tiny_tokenizer

    url, log = bench("tbench")
    card = tmp_path / "card.toml"
    card.write_text(SHELL_CARD)
    start = count(log)
    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=url, group_size=4, train_split="test", action_card=str(card),
                                          max_steps=1, sampler="sequential", **LEVEL))
    args = grpo_args(tmp_path, max_steps=1)
    tokenizer = tiny_tokenizer()
    dataset = openenv.dataset(args)
    trainer = GRPOTrainer(model=tiny_model(tokenizer), reward_funcs=[openenv.reward], train_dataset=dataset,
                          args=args, processing_class=tokenizer)
    trainer.train()
    openenv.close()
    system = next(iter(dataset))["prompt"][0]["content"]
    assert "your whole reply is one shell command" in system and "action_type" not in system
    sent = sent_since(log, start)
    assert len(sent) == 8 and all(a["action_type"] == "exec" and a["block"] is True for a in sent)


def finrl_reader(prompt: list[dict]) -> str:
    """Buys one unit of each stock it believes there are: one until the environment says how many it expects."""
    system = prompt[0]["content"]
    assert "one per stock" in system and "Structure: [balance, prices..., holdings..., indicators...]" in system
    told = [int(m.group(1)) for m in (re.search(r"expected (\d+)", msg["content"]) for msg in prompt[2:]
                                      if msg["role"] == "user") if m]
    return json.dumps([1.0] * (told[-1] if told else 1))


def test_finrl_says_what_its_numbers_are_and_a_wrong_length_is_the_models_to_learn_from(bench):
    url, _ = bench("finrl")
    reader = Reader(finrl_reader)
    result = run_eval(EvalConfig(base_url=url, per_family=1, max_steps=6, **LEVEL), reader)
    by_level = {r.family: r for r in result.results}
    assert (by_level["0"].stop, by_level["0"].invalid_actions) == ("done", 0)
    assert (by_level["1"].stop, by_level["1"].invalid_actions) == ("done", 1)  # told "expected 2", then right
    assert by_level["0"].reward > 0 and by_level["1"].reward > 0
