"""MCP environments in TRL's tool mode: each listed tool a typed method of environment_factory's class (servers shaped
like echo_env and calendar_env, tests/play/mcp_tool_envs.py), and tool-mode evals that ask through tool calls."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from openenv_prime.client.prompts.mcp import instructions
from openenv_prime.evaluation import EvalSchedule
from openenv_prime.evaluation.episodes import read_episodes
from openenv_prime.evaluation.harness import EvalHarness
from openenv_prime.evaluation.show import episode_panel
from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig
from openenv_prime.trl.policy import ToolCallReply, TransformersPolicy
from openenv_prime.trl.tool_eval import ToolCallAsking
from tests.play.mcp_tool_envs import TASKS
from tests.play.wild_envs import calendar_tools
from tests.trl_integration.tiny import ScriptedModel, grpo_args, tiny_model, tiny_tokenizer, tool_call


def tool_mode(url: str, tmp_path, **settings):
    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=url, group_size=4, train_split="test", test_split="test",
                                          **settings), tool_mode=True)
    openenv.dataset(grpo_args(tmp_path))
    return openenv, openenv.environment_factory()


def row(index: int) -> dict:
    return {"prompt": [{"role": "user", "content": ""}], "task_split": "test", "task_index": index,
            "task_family": str(TASKS[index]["tier"]), "draw": 0}


def tools_of(env) -> dict:
    """The methods TRL makes tools of (its own rule: public functions of the class other than reset)."""
    import inspect

    return {name: getattr(env, name) for name, _ in inspect.getmembers(type(env), inspect.isfunction)
            if not name.startswith("_") and name != "reset"}


def test_an_echo_env_tool_is_a_typed_method_whose_calls_play_the_episode(echo_tools_server, tmp_path):
    from transformers.utils import get_json_schema

    openenv, factory = tool_mode(echo_tools_server, tmp_path)
    env = factory()
    assert list(tools_of(env)) == ["echo_message"]
    declared = get_json_schema(env.echo_message)["function"]
    assert declared["description"] == "Echo back the message you give it."
    assert declared["parameters"]["properties"]["message"]["type"] == "string"
    assert declared["parameters"]["required"] == ["message"]
    first = env.reset(**row(1))
    # the task from the reset's metadata; the tool listing is left out (the declarations carry the tools)
    assert first == "Echo the word 'river' with the echo tool." and "Tools you can call" not in first
    assert env.echo_message(message="stone") == "stone" and env.episode.steps == 1 and not env.episode.finished
    with pytest.raises(ValueError, match="input schema of 'echo_message'"):
        env.echo_message()  # the required argument missing: the engine's feedback, raised for TRL to show the model
    assert env.episode.invalid_actions == 1 and env.episode.steps == 1
    assert "episode is over (reward 1)" in env.echo_message(message="river")
    assert env.episode.stop == "done" and env.episode.reward == 1.0
    openenv.close()


def test_calendar_envs_tools_are_declared_with_their_required_arguments_within_the_budget(calendar_tools_server,
                                                                                          tmp_path, capfd):
    from transformers.utils import get_json_schema

    openenv, factory = tool_mode(calendar_tools_server, tmp_path)
    env = factory()
    warned = capfd.readouterr().err
    tools = tools_of(env)
    listed = calendar_tools()
    assert sorted(tools) == sorted(t["name"] for t in listed)
    said = 0
    for tool in listed:  # every tool with its required arguments, typed; descriptions cut to their first sentence
        declared = get_json_schema(tools[tool["name"]])["function"]
        assert declared["parameters"]["required"] == tool["inputSchema"]["required"]
        assert declared["description"] == tool["description"].split("\n")[0]
        said += len(declared["description"]) + sum(len(k) + len(v["description"])
                                                   for k, v in declared["parameters"]["properties"].items())
    assert said <= openenv.config.observation_budget < sum(len(json.dumps(t)) for t in listed)
    assert get_json_schema(env.create_event)["function"]["parameters"]["properties"]["day"]["type"] == "integer"
    # what was left out is the operator's note, never the model's text
    assert "declared to TRL without their optional arguments and full descriptions" in warned
    first = env.reset(**row(2))
    assert first == "Schedule a meeting titled 'sync' on day 19 of this month." and "budget" not in first
    assert env.calendar_op_04(field_0="x", field_3="y") == '{"ok": true}'  # an optional argument is still taken
    with pytest.raises(ValueError, match="'title' is a required property"):
        env.create_event(day=19)
    assert "episode is over (reward 1)" in env.create_event(day=19, title="sync")
    openenv.close()


def echo_player(prompt: str) -> str:
    """First a call that misses its argument, then, having read the error, the word the task names."""
    if "'error'" not in prompt:
        return tool_call("echo_message")
    return tool_call("echo_message", message=prompt.split("Echo the word '")[1].split("'")[0])


def test_a_tool_mode_eval_asks_through_tool_calls_as_training_does(echo_tools_server, tmp_path):
    from trl.chat_template_utils import add_response_schema, qwen2_5_chat_template

    openenv, factory = tool_mode(echo_tools_server, tmp_path, system_prompt="Use the tools.")
    env = factory()
    tokenizer = add_response_schema(tiny_tokenizer(qwen2_5_chat_template))
    tools = list(tools_of(env).values())
    asked: list[list[dict]] = []
    policy = TransformersPolicy(ScriptedModel(tokenizer, echo_player), tokenizer, max_new_tokens=200, tools=tools)

    def recording(prompts):
        asked.extend(prompts)
        replies = policy(prompts)
        assert all(isinstance(r, ToolCallReply) and r.message["tool_calls"] for r in replies)  # parsed by TRL's parser
        return replies

    harness = EvalHarness(openenv.eval_config(per_family=2), EvalSchedule(every=1), episodes=tmp_path / "episodes.jsonl")
    record = harness.maybe_run(1, policy=recording, asking=ToolCallAsking(tools, openenv.config.prompt_budget))
    assert record["overall"] == 1.0 and record["eval_episodes"] == 4 and record["eval_replies"] == 8
    first_turns = [p for p in asked if len(p) == 2]
    assert len(first_turns) == 4 and all(p[0] == {"role": "system", "content": "Use the tools."} for p in first_turns)
    trained = {env.reset(**row(i)) for i in range(4)}  # what training's reset puts in the row's user message
    assert {p[1]["content"] for p in first_turns} == trained
    second = [p for p in asked if len(p) == 4]
    assert len(second) == 4
    for prompt in second:  # the call TRL parsed, and the engine's feedback as TRL shows a raised tool error
        assert prompt[2]["tool_calls"] == [{"type": "function", "function": {"name": "echo_message", "arguments": {}}}]
        assert prompt[3]["role"] == "tool" and prompt[3]["content"].startswith("{'error': ")
        assert "input schema of 'echo_message'" in prompt[3]["content"]
    texts = [m.get("content") or "" for p in asked for m in p]
    assert not any(instructions() in t or "Tools you can call" in t for t in texts)  # no text protocol
    openenv.close()
    rows = read_episodes(tmp_path / "episodes.jsonl")  # each episode's record: the conversation as the model saw it
    assert len(rows) == 4
    for episode in rows:
        assert [m["role"] for m in episode["messages"]] == ["system", "user", "assistant", "tool", "assistant", "tool"]
        assert episode["messages"][-1]["content"] == "The episode is over (reward 1)."
        shown = Console(width=200, record=True)
        shown.print(episode_panel(episode, max_chars=0))
        assert '{"name": "echo_message", "arguments": {"message": "' in shown.export_text()  # show prints the calls


def test_mcp_tools_drive_grpo_training_and_its_evals(echo_tools_server, tmp_path, monkeypatch):
    from trl import GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    declared: list[list[str]] = []
    generate = TransformersPolicy.generate

    def recording_generate(self, prompts, **kw):
        declared.append([tool.__name__ for tool in self.tools or []])
        return generate(self, prompts, **kw)

    monkeypatch.setattr(TransformersPolicy, "generate", recording_generate)
    openenv, factory = tool_mode(echo_tools_server, tmp_path)
    args = grpo_args(tmp_path, max_steps=2, max_completion_length=12)
    tokenizer = tiny_tokenizer(qwen2_5_chat_template)
    trainer = GRPOTrainer(model=tiny_model(tokenizer), reward_funcs=[openenv.reward], train_dataset=openenv.dataset(args),
                          args=args, processing_class=tokenizer, environment_factory=openenv.environment_factory())
    assert [tool.__name__ for tool in trainer.tools] == ["echo_message"]
    callback = openenv.attach(trainer, schedule=EvalSchedule(every=2), per_family=2, max_new_tokens=8)
    trainer.train()
    openenv.close()
    assert trainer.state.global_step == 2 and openenv.reward.groups == 4
    assert declared and all(names == ["echo_message"] for names in declared)  # the evals declared the tools too
    assert [r["step"] for r in callback.harness.records] == [0, 2]


@given(st.text(max_size=12), st.sets(st.text(min_size=1, max_size=6), max_size=4))
def test_any_tool_or_argument_name_becomes_a_free_python_identifier(text, taken):
    import keyword

    from openenv_prime.trl.declarations import python_name
    from openenv_prime.trl.mcp_tools import RESERVED

    name = python_name(text, taken, prefix="call", reserved=RESERVED)
    assert name.isidentifier() and not keyword.iskeyword(name) and name not in taken and name not in RESERVED
