"""The environment's own instructions win, in every consumer, for environments others wrote: an `openenv import`-ed
verifiers environment whose system prompt demands `<answer>...</answer>` tags (its parser scores a bare sum 0), and the
ORS quick start's `MathEnv` (no system prompt, a `submit` tool without a description, the gold answer in its specs).

Through the eval, the verifiers taskset and a 2-step MLX training run (its evals included), each checks:
(a) the environment's system prompt is the system prompt, with the reply format after it, and ours (eval's default,
    set as the taskset's and the trainer's too) is not sent; the ORS environment brings none, so ours is sent, with
    the question as its text, not the import wrapper's bookkeeping, and the tool saying what it takes;
(b) the eval's prompts are the training's and the taskset's, for the same tasks;
(c) a policy that follows only what the prompt says scores what a scripted oracle scores (every task right);
(d) no prompt holds the gold answer.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, run_eval
from openenv_prime.client.prompts.render import agreeing
from openenv_prime.evaluation.config import DEFAULT_SYSTEM_PROMPT
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, last_user_text
from tests.imported.helpers import adder, oracle, prompt_reader, request_text, system_text
from tests.imported.test_imported_gold_answer import assert_no_gold_answer
from tests.verifiers_taskset.helpers import make_env, run_episodes

HELD_OUT = {"vf_sums_env": "eval", "ors_quickstart_env": "test"}
TASKS = 8  # in each held-out split
OWN = {"vf_sums_env": "give the sum inside <answer>...</answer> tags", "ors_quickstart_env": None}
"""A phrase of the environment's own system prompt (None: it brings none)."""
BOOKKEEPING = ("source_type", "original_env_class", "task_spec", '"detail"', "[system]", "[user]")


@pytest.fixture(params=["vf_sums_env", "ors_quickstart_env"])
def instructed(request, imported_packages):
    """``(name, base_url)`` of each environment. (Naming ``imported_packages`` sends these tests to the pytest-xdist
    worker that has the imported packages: tests/conftest.py.)"""
    server = {"vf_sums_env": "vf_sums_server", "ors_quickstart_env": "ors_quickstart_server"}[request.param]
    return request.param, request.getfixturevalue(server)


def assert_whose_instructions(name: str, prompts: list[tuple[str, str]]) -> None:
    """(a) for ``(system, rest)`` prompt texts: the environment's own system prompt opens each system prompt and ours
    is absent, or (where it brings none) ours is there; the tool-call format follows; the rest is the question and
    the tools, never the wrapper's bookkeeping."""
    assert prompts
    for system, rest in prompts:
        own = OWN[name]
        if own is not None:
            assert own in system.split("\n\n")[0] and DEFAULT_SYSTEM_PROMPT not in system, system
        else:  # ours, made to agree with the tool-call format (the answer goes inside the call)
            assert system.startswith(agreeing(DEFAULT_SYSTEM_PROMPT, tool_call=True)), system
            assert "only the final answer" not in system and "inside its arguments" in system
        assert "calling one tool per reply" in system
        assert not any(label in rest for label in BOOKKEEPING), rest
        if name == "ors_quickstart_env":
            assert "- submit: (no description) takes `answer` (string, required)" in rest


def eval_prompts(url: str, rule) -> tuple[list, list[dict]]:
    """The eval of every held-out task, answered by ``rule``: its results and the requests the model was sent."""
    model = ScriptedOpenAIServer(rule)
    with model as model_url:
        result = run_eval(EvalConfig(base_url=url, per_family=TASKS), OpenAIPolicy(model_url, "scripted"))
    return result.results, model.requests


def test_eval_sends_the_environments_instructions_and_a_prompt_reader_scores_as_the_oracle(instructed):
    name, url = instructed
    read, requests = eval_prompts(url, prompt_reader)
    known, _ = eval_prompts(url, oracle(name))
    assert len(read) == TASKS and [r.reward for r in read] == [r.reward for r in known] == [1.0] * TASKS  # (c)
    assert all(r.invalid_actions == 0 for r in read)
    assert_whose_instructions(name, [(system_text(r), last_user_text(r)) for r in requests])  # (a)
    assert_no_gold_answer([request_text(r) for r in requests], expected=TASKS)  # (d)
    if OWN[name] is not None:  # what following our default instead (a bare answer, no tags) would have scored
        bare, _ = eval_prompts(url, adder("completion"))
        assert [r.reward for r in bare] == [0.0] * TASKS


def test_the_taskset_sends_the_evals_prompts_and_a_prompt_reader_scores_as_the_oracle(instructed):
    name, url = instructed
    env = make_env(url, max_sessions=1, splits=[HELD_OUT[name]], instructions=DEFAULT_SYSTEM_PROMPT)
    tasks = list(env.taskset)
    model = ScriptedOpenAIServer(prompt_reader)
    with model as model_url:
        episodes = asyncio.run(run_episodes(env, tasks, model_url))
    assert len(tasks) == TASKS and all(e.ok and e.traces[0].reward == 1.0 for e in episodes)  # (c)
    assert_whose_instructions(name, [(system_text(r), last_user_text(r)) for r in model.requests])  # (a)
    assert_no_gold_answer([request_text(r) for r in model.requests], expected=TASKS)  # (d)
    _, asked = eval_prompts(url, prompt_reader)
    assert {json.dumps(r["messages"]) for r in asked} == {json.dumps(r["messages"]) for r in model.requests}  # (b)


def test_training_and_its_evals_send_the_environments_instructions_and_the_same_prompts(instructed, tmp_path, monkeypatch):
    from openenv_prime.mlx_trainer.config import config_from_dict
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model
    from openenv_prime.mlx_trainer.rollouts import policy, runner
    from openenv_prime.mlx_trainer.training.loop import train

    name, url = instructed
    trained: list[str] = []  # the messages of each training prompt, as JSON
    evaluated: list[str] = []  # the messages of each eval prompt (the tiny model's tokenizer cannot spell them all)
    training_prompt, render_prompt = runner.Renderer.prompt, policy.render_prompt

    def training_opening(renderer, chat, opening=None):
        messages = training_prompt(renderer, chat, opening)
        trained.append(json.dumps(messages))
        return messages

    def eval_prompt(tokenizer, messages):
        evaluated.append(json.dumps(messages))
        return render_prompt(tokenizer, messages)

    monkeypatch.setattr(runner.Renderer, "prompt", training_opening)
    monkeypatch.setattr(policy, "render_prompt", eval_prompt)
    split = HELD_OUT[name]  # trained on too, so that the eval's tasks are the training's
    config = config_from_dict({
        "seed": 0, "steps": 2, "plot": False, "model": {"path": str(build_tiny_model(tmp_path / "tiny"))},
        "grpo": {"group_size": 2, "tasks_per_step": 2, "max_new_tokens": 8, "system_prompt": DEFAULT_SYSTEM_PROMPT},
        "environment": {"base_url": url, "max_sessions": 1, "max_invalid_actions": 0, "train_split": split,
                        "test_split": split},
        "eval": {"every": 2, "tasks_per_family": TASKS}, "checkpoint": {"every": 2},
    })
    assert train(config, tmp_path / "run", progress=False).state.step == 2
    # one model turn per episode (the first invalid reply ends it): every eval prompt is an episode's first
    assert len(trained) >= 2 * 4 and len(evaluated) == 2 * TASKS
    assert set(trained) <= set(evaluated)  # (b)
    prompts = [json.loads(p) for p in trained + evaluated]
    assert all(p[0]["role"] == "system" and [m["role"] for m in p[1:]] == ["user"] for p in prompts)
    assert_whose_instructions(name, [(p[0]["content"], p[1]["content"]) for p in prompts])  # (a)
    assert_no_gold_answer([p[0]["content"] + "\n" + p[1]["content"] for p in prompts], expected=len(prompts))  # (d)
