"""Tool mode: TRL's environment_factory over OpenEnv servers, its tools made from the action schema, and no prompt
(training rows, the tool loop's prompts, the evals) showing a gold answer."""

from __future__ import annotations

import json
import typing

import pytest

from openenv_prime.evaluation import EvalSchedule
from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig
from openenv_prime.trl.policy import TransformersPolicy
from tests.play.gold_server import GOLD, gold_in
from tests.trl_integration.tiny import grpo_args, tiny_model, tiny_tokenizer


def factory_for(url: str, tmp_path, **settings):
    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=url, group_size=4, train_split="test", **settings), tool_mode=True)
    openenv.dataset(grpo_args(tmp_path))
    return openenv, openenv.environment_factory()


def row_of(openenv, index: int) -> dict:
    return {"prompt": [{"role": "user", "content": ""}], "task_split": "test", "task_index": index,
            "task_family": "0", "draw": 0}


def test_an_enum_action_becomes_a_typed_tool_with_its_legal_values(grid_world_server, tmp_path):
    from transformers.utils import get_json_schema

    openenv, factory = factory_for(grid_world_server, tmp_path)
    env = factory()
    tools = [name for name in dir(type(env)) if not name.startswith("_") and callable(getattr(env, name)) and name != "reset"]
    assert tools == ["action"]
    schema = get_json_schema(env.action)["function"]
    assert schema["name"] == "action"
    assert schema["parameters"]["properties"]["action"]["enum"] == ["UP", "DOWN", "LEFT", "RIGHT"]
    assert schema["parameters"]["required"] == ["action"]
    assert typing.get_args(typing.get_type_hints(env.action)["action"]) == ("UP", "DOWN", "LEFT", "RIGHT")
    # task grid-a: from (0, 0) to (1, 0): DOWN reaches it
    first = env.reset(**row_of(openenv, 0))
    assert "0" in first and env.episode.steps == 0
    moved = env.action(action="LEFT")  # against the wall: a step that misses the goal
    assert "x: 0" in moved and env.episode.steps == 1 and not env.episode.finished
    with pytest.raises(ValueError, match="not one of the allowed values"):
        env.action(action="NORTH")  # the engine's feedback, raised for TRL to show the model
    assert env.episode.invalid_actions == 1 and env.episode.steps == 1
    assert "episode is over" in env.action(action="DOWN")
    assert env.episode.stop == "done" and env.episode.reward == pytest.approx(-0.1 + 1.0)
    with pytest.raises(ValueError, match="episode is over"):
        env.action(action="UP")
    openenv.close()


def test_a_free_text_action_is_a_tool_whose_argument_is_the_reply(gold_fields_server, tmp_path):
    from transformers.utils import get_json_schema

    openenv, factory = factory_for(gold_fields_server, tmp_path)
    env = factory()
    schema = get_json_schema(env.reply)["function"]
    assert schema["parameters"]["properties"]["reply"] == {"type": "string", "description": "The reply to the question."}
    first = env.reset(**row_of(openenv, 1))
    assert "what is 3 plus 4?" in first and not gold_in([first])
    second = env.reply(reply="7")
    assert not gold_in([second]) and env.episode.steps == 1
    openenv.close()


def test_a_tool_mode_episode_ends_before_its_conversation_exceeds_the_prompt_budget(coding_server, tmp_path):
    from openenv_prime.client.prompts.budget import prompt_size

    budget, failing = 8000, "raise RuntimeError('it failed: ' + 'no luck ' * 150)"  # a 1,300-character traceback
    openenv, factory = factory_for(coding_server, tmp_path, prompt_budget=budget, max_steps=16, max_invalid_actions=16)
    env = factory()
    env.reset(**row_of(openenv, 0))
    sizes, answer = [], ""
    while not env.episode.finished:
        answer = env.code(code=failing)
        sizes.append(prompt_size(openenv.env.tool_prompt() + env.episode.chat))
    # TRL keeps every turn, so the episode ends where the next traceback would take the conversation over the budget
    assert "prompt budget (8,000 characters)" in answer and env.episode.stop == "stopped"
    assert 1 < env.episode.steps < 16 and max(sizes[:-1]) <= budget < sizes[-1]
    openenv.close()


def test_in_tool_mode_the_environments_own_instructions_open_the_first_observation(instructed_server, tmp_path):
    """A row's system prompt is made before its reset, so the environment's instructions come with the observation."""
    from tests.play.instructed_server import SYSTEM_PROMPT, TASKS

    openenv, factory = factory_for(instructed_server, tmp_path, system_prompt="Reply with only the final number.")
    env = factory()
    first = env.reset(**row_of(openenv, 2))
    assert first == f"{SYSTEM_PROMPT}\n\nWhat is {TASKS[2]['a']} + {TASKS[2]['b']}?"
    assert "episode is over (reward 1)" in env.reply(reply=f"<answer>{TASKS[2]['a'] + TASKS[2]['b']}</answer>")
    openenv.close()


@pytest.mark.parametrize("calls", [True, False], ids=["tool calls", "a plain answer"])
def test_a_tool_mode_eval_plays_a_text_environment_as_training_does(gold_fields_server, tmp_path, calls):
    """The eval's prompts carry the tool; each call TRL's parser reads is played as the reply it stands for, and a
    first reply that calls no tool is played as the reply, as training's reward function plays it."""
    import re

    from trl.chat_template_utils import add_response_schema, qwen2_5_chat_template

    from openenv_prime.evaluation.harness import EvalHarness
    from openenv_prime.trl.tool_eval import ToolCallAsking
    from tests.trl_integration.tiny import ScriptedModel, tool_call

    asked: list[str] = []

    def player(prompt: str) -> str:
        asked.append(prompt)
        a, b = re.findall(r"what is (\d+) plus (\d+)\?", prompt)[0]
        answer = str(int(a) + int(b))
        return tool_call("reply", reply=answer) if calls else answer

    openenv, factory = factory_for(gold_fields_server, tmp_path)
    tools = [factory().reply]
    tokenizer = add_response_schema(tiny_tokenizer(qwen2_5_chat_template))
    policy = TransformersPolicy(ScriptedModel(tokenizer, player), tokenizer, max_new_tokens=100, tools=tools)
    harness = EvalHarness(openenv.eval_config(per_family=4), EvalSchedule(every=1))  # one family: every task
    record = harness.maybe_run(1, policy=policy, asking=ToolCallAsking(tools, openenv.config.prompt_budget))
    openenv.close()
    assert asked and all('"name": "reply"' in prompt for prompt in asked)  # the tool declared in every prompt
    if calls:  # the server asks twice: both calls played, the second scored
        assert record["overall"] == 1.0 and record["eval_replies"] == 8
        assert all("<tool_call>" in prompt and "Noted. Reply once more" in prompt for prompt in asked[4:])
    else:  # played as the one reply, then the episode ends unfinished, as training's reward function ends it
        assert record["overall"] == 0.0 and record["eval_replies"] == 4 and record["eval_episodes"] == 4
        assert len(asked) == 4  # the model is not asked again for an episode training would have ended
    assert not gold_in(asked)


def test_tool_mode_trains_and_no_prompt_shows_a_gold_answer(gold_fields_server, tmp_path, monkeypatch):
    from trl import GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    seen: list[str] = []
    generate = TransformersPolicy.generate

    def recording_generate(self, prompts):
        seen.extend(m["content"] for p in prompts for m in p)
        return generate(self, prompts)

    monkeypatch.setattr(TransformersPolicy, "generate", recording_generate)
    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=gold_fields_server, group_size=4, train_split="test",
                                          test_split="test", max_steps=2), tool_mode=True)
    args = grpo_args(tmp_path, max_steps=2, max_completion_length=12)
    tokenizer = tiny_tokenizer(qwen2_5_chat_template)
    dataset = openenv.dataset(args)
    trainer = GRPOTrainer(model=tiny_model(tokenizer), reward_funcs=[openenv.reward], train_dataset=dataset, args=args,
                          processing_class=tokenizer, environment_factory=openenv.environment_factory())
    reward = openenv.reward
    prompts_seen: list[str] = []
    call = type(reward).__call__

    def recording_reward(self, prompts, completions, *a, **kw):
        prompts_seen.extend(m["content"] for p in prompts for m in p if isinstance(m.get("content"), str))
        return call(self, prompts, completions, *a, **kw)

    monkeypatch.setattr(type(reward), "__call__", recording_reward)
    openenv.attach(trainer, schedule=EvalSchedule(every=2), per_family=2, max_new_tokens=4)
    trainer.train()
    openenv.close()
    assert trainer.state.global_step == 2 and openenv.reward.groups == 4
    assert openenv.sampler.metrics(per_key=False)["groups"] == 4
    assert any("plus" in text for text in prompts_seen)  # the observation reset() returned reached the prompt
    assert seen and any("plus" in text for text in seen)
    assert not gold_in(prompts_seen + seen)
    assert all(g not in str(row) for row in openenv.rows.pending.values() for g in GOLD)


def test_text_mode_evals_ask_what_training_asks_and_no_prompt_shows_a_gold_answer(gold_fields_server, tmp_path,
                                                                                    monkeypatch):
    from trl import GRPOTrainer

    asked: list[list[dict]] = []
    generate = TransformersPolicy.generate
    monkeypatch.setattr(TransformersPolicy, "generate", lambda self, prompts: asked.extend(prompts) or generate(self, prompts))
    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=gold_fields_server, group_size=4, train_split="test",
                                          system_prompt="Answer the question."))
    args = grpo_args(tmp_path, max_steps=2, per_device_train_batch_size=16)  # 4 rows a step: every task
    rows = []
    dataset = openenv.dataset(args)
    tokenizer = tiny_tokenizer()
    trainer = GRPOTrainer(model=tiny_model(tokenizer), reward_funcs=[openenv.reward], train_dataset=dataset, args=args,
                          processing_class=tokenizer)
    rows_of = openenv.rows.rows

    def recording_rows():
        for row in rows_of():
            rows.append(row)
            yield row

    monkeypatch.setattr(openenv.rows, "rows", recording_rows)
    openenv.attach(trainer, schedule=EvalSchedule(every=2), per_family=4, max_new_tokens=4)
    trainer.train()
    openenv.close()
    trained = {json.dumps(row["prompt"]) for row in rows}
    first_turns = [p for p in asked if len(p) == 2]  # system + the first observation
    assert first_turns and {json.dumps(p) for p in first_turns} <= trained  # the eval asks exactly what training asks
    assert all(p[0] == {"role": "system", "content": "Answer the question."} for p in first_turns)
    texts = [m["content"] for row in rows for m in row["prompt"]] + [m["content"] for p in asked for m in p]
    assert any("plus" in t for t in texts) and not gold_in(texts)
