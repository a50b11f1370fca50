"""Environments shaped like calendar_env, repl_env and dipg_safety_env (tests/play/wild_envs.py), the ones that
failed a new user: a plain action with `tool_name` and `arguments` is not MCP, a content field with an empty default
is offered, a 140,000-character tool list shows every tool name within the budget, instructions in metadata reach
the prompt, a run whose episodes never end says so, a step the environment fails ends that episode and not the run
(eval, its report and CLI, the MLX trainer, TRL), an environment that fails every step stops the run saying why, and
no system prompt asks for "only the final answer" beside a JSON action or a tool call."""

from __future__ import annotations

import json
import re

import pytest

from openenv_prime.client.prompts import mcp
from openenv_prime.client.prompts.actions import ActionFormat
from openenv_prime.client.prompts.observations import DEFAULT_BUDGET
from openenv_prime.client.prompts.render import EpisodeProtocol
from openenv_prime.evaluation import EvalConfig, run_eval
from openenv_prime.evaluation.config import DEFAULT_SYSTEM_PROMPT
from tests.play import wild_envs
from tests.play.reader import Reader
from tests.play.wild_envs import TASKS, TOOL_COUNT, calendar_tools

LEVEL = {"family_field": "level", "check_reset": False}


def calendar_reader(prompt: list[dict]) -> str:
    """Lists the tools the first message tells it to discover, then calls the one that schedules, on the day asked."""
    if len(prompt) <= 2:
        return json.dumps({"action_type": "ListToolsAction"})
    assert "create_event" in prompt[-1]["content"]
    day = int(re.search(r"on day (\d+)", prompt[1]["content"]).group(1))
    return json.dumps({"action_type": "ToolCallAction", "tool_name": "create_event",
                       "arguments": {"day": day, "title": "sync"}})


def repl_reader(prompt: list[dict]) -> str:
    """Writes the code the observation asks for, since the system prompt says the reply is Python code."""
    assert "`code` field: Python code to execute" in prompt[0]["content"]
    a, b = map(int, re.search(r"Compute (\d+) \* (\d+)", prompt[1]["content"]).groups())
    return f"print('FINAL(' + str({a} * {b}) + ')')"


def sum_reader(prompt: list[dict]) -> str:
    task = next(m["content"] for m in prompt if m["role"] == "user")  # later ones may be the environment's errors
    a, b = map(int, re.search(r"What is (\d+) \+ (\d+)", task).groups())
    return str(a + b)


@pytest.fixture
def wild(play_servers):
    return lambda name: play_servers("wild_envs.py", "0.4.1", name)


# ---- which action kind, and which fields the model fills ------------------------------------------------------
def test_a_plain_action_with_tool_name_and_arguments_is_not_mcp_and_its_arguments_are_offered():
    from openenv.core.env_server.mcp_types import CallToolAction

    schema = wild_envs.CalendarAction.model_json_schema()
    assert not mcp.is_mcp_action(schema) and mcp.is_mcp_action(CallToolAction.model_json_schema())
    actions = ActionFormat.from_schema(schema)
    assert set(actions.fields) == {"action_type", "tool_name", "arguments"} and actions.settings == ()
    assert actions.parse('{"action_type": "ToolCallAction", "tool_name": "x", "arguments": {"day": 3}}') == {
        "action_type": "ToolCallAction", "tool_name": "x", "arguments": {"day": 3}}


def test_the_content_field_is_offered_though_its_default_is_empty():
    repl = ActionFormat.from_schema(wild_envs.ReplAction.model_json_schema())
    assert repl.field == "code" and repl.free_text and repl.code and "is_final" in repl.settings
    assert repl.parse("print(1)") == {"code": "print(1)"}
    # the one text field besides flags, whatever the description says
    lone = {"properties": {"text": {"type": "string", "default": ""}, "verbose": {"type": "boolean", "default": False}}}
    assert ActionFormat.from_schema(lone).field == "text"
    # a required field is what the model fills: an empty-default text field stays a setting
    required = {"properties": {"move": {"type": "integer"}, "note": {"type": "string", "default": ""}}, "required": ["move"]}
    assert ActionFormat.from_schema(required).settings == ("note",)
    # two text fields and a description naming neither: no guess, the server's defaults stand
    unnamed = {"description": "An action.", "properties": {"a": {"type": "string", "default": ""},
                                                         "b": {"type": "string", "default": ""}}}
    with pytest.raises(ValueError, match="name the ones it fills with action_fields"):
        ActionFormat.from_schema(unnamed)


def test_no_system_prompt_asks_for_only_the_final_answer_beside_a_json_action_or_a_tool_call():
    from openenv.core.env_server.mcp_types import CallToolAction

    from tests.play import grid_server, lookalike_envs

    schemas = {"calendar": wild_envs.CalendarAction, "repl": wild_envs.ReplAction, "flaky": wild_envs.AnswerAction,
               "mcp": CallToolAction, "grid": grid_server.GridAction,
               **{name: action for name, (_, action, _) in lookalike_envs.ENVIRONMENTS.items()}}
    kinds = set()
    for name, action in schemas.items():
        protocol = EpisodeProtocol(action.model_json_schema())
        system = protocol.instructions(DEFAULT_SYSTEM_PROMPT)
        structured = protocol.mcp or protocol.text_field is None or protocol.action_format.code
        kinds.add("tool call" if protocol.mcp else "json" if protocol.text_field is None else
                  "code" if protocol.action_format.code else "value")
        assert ("only the final answer" in system) is not structured, (name, system)
        if structured:
            assert "goes inside" in system, (name, system)
    assert kinds == {"tool call", "json", "code", "value"}  # every action kind of the matrix was checked


# ---- what the model is shown --------------------------------------------------------------------------------------
def test_a_140k_character_tool_list_shows_every_tool_name_within_the_budget():
    tools = mcp.tool_list(calendar_tools())
    full, nothing_left_out = mcp.tools_listing(tools)
    assert len(full) > 140_000 and nothing_left_out is None
    for budget, shows in ((DEFAULT_BUDGET * 3 // 4, "- calendar_op_03(field_0, ...): Calendar operation number 3"),
                          (DEFAULT_BUDGET, "Calendar operation number 3 on events and lists."),
                          (12_000, "create_event(day, title)"), (400, None)):
        text, note = mcp.tools_listing(tools, budget)
        assert len(text) <= budget and "budget" not in text and "larger" not in text  # the operator's, in the note
        assert note.startswith(f"the 37-tool list was shortened to fit the observation budget ({budget:,} characters)")
        if shows is not None:
            assert all(tool.name in text for tool in tools) and shows in text
    shown = text.split(": ", 1)[1].split(" [")[0].split(", ")  # names alone, as many as fit, and how many more
    assert shown[0] == "create_event" and text.endswith(f"[and {TOOL_COUNT - len(shown)} more]")


def test_calendar_plays_through_eval_from_its_metadata_instructions_and_its_tool_list(wild):
    reader = Reader(calendar_reader)
    result = run_eval(EvalConfig(base_url=wild("calendar"), per_family=2, max_steps=4, **LEVEL), reader)
    assert [(r.stop, r.reward) for r in result.results] == [("done", 1.0)] * 4
    (note,) = result.warnings  # the shortened tool list is said to the operator, not to the model
    assert note.startswith("tools_list: the 37-tool list was shortened to fit the observation budget (2,988 characters)")
    first, listed = reader.prompts[0], next(p for p in reader.prompts if len(p) > 2)
    assert "Use ListToolsAction to discover tools." in first[1]["content"]  # from the reset's metadata
    assert "only the final answer" not in first[0]["content"] and '"arguments" (object' in first[0]["content"]
    tool_text = listed[-1]["content"]
    assert len(tool_text) <= DEFAULT_BUDGET and all(t["name"] in tool_text for t in calendar_tools())
    required = [f"{t['name']}({', '.join(t['inputSchema']['required'])}" for t in calendar_tools()]
    assert all(call in tool_text for call in required)  # each tool's required arguments, at the default budget
    assert not any("budget" in m["content"] for prompt in reader.prompts for m in prompt)


def test_repl_plays_its_code_and_a_run_whose_episodes_never_end_says_so(wild):
    solved = run_eval(EvalConfig(base_url=wild("repl"), per_family=2, **LEVEL), Reader(repl_reader))
    assert [(r.stop, r.reward, r.invalid_actions) for r in solved.results] == [("done", 1.0, 0)] * 4
    config = EvalConfig(base_url=wild("repl"), per_family=1, max_steps=3, action_field="final_answer", **LEVEL)
    silent = run_eval(config, Reader(lambda prompt: "4321"))
    assert [(r.stop, r.invalid_actions) for r in silent.results] == [("max_steps", 0)] * 2
    (warning,) = [w for w in silent.warnings if "never finished" in w]
    assert "filled `final_answer`" in warning and "`code`, `is_final`" in warning and "--action-field" in warning


# ---- environments that fail ---------------------------------------------------------------------------------------
def test_a_step_error_ends_one_episode_and_the_eval_and_its_report_go_on(wild, tmp_path, capsys):
    from openenv_prime.cli import main
    from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer

    def reader(request):
        return sum_reader(request["messages"])

    with ScriptedOpenAIServer(reader) as model_url:
        code = main(["eval", "--base-url", wild("flaky"), "--model", "m", "--model-base-url", model_url, "--family-field",
                     "level", "--per-family", "6", "--no-reset-check", "--out", str(tmp_path / "report.json")])
    assert code == 0
    report = json.loads((tmp_path / "report.json").read_text())
    by_level = {f["family"]: f for f in report["families"]}
    assert (by_level["0"]["accuracy"], by_level["0"]["errored"]) == (1.0, 0)
    assert (by_level["1"]["errored"], by_level["1"]["tasks"]) == (6, 6)  # every level-1 episode, each alone
    assert report["errored"] == 6 and report["accuracy"] == 1.0 and report["stopped"] is None  # errored: left out
    errored = [r for r in report["results"] if r["stop"] == "error"]
    assert all(r["reward"] is None and "model_dump" in r["error"] for r in errored)
    assert "6 of 12 episodes failed inside the environment" in capsys.readouterr().err
    # the episodes file shows each failure beside what the model was asked and replied
    from openenv_prime.evaluation.episodes import read_episodes

    failed = [row for row in read_episodes(tmp_path / "report.episodes.jsonl") if row["stop"] == "error"]
    assert [row["error"] for row in failed] == [r["error"] for r in errored]
    assert all(row["step_rewards"] == [] and row["messages"][-1]["role"] == "assistant" for row in failed)


def test_an_environment_that_fails_every_step_stops_the_eval_with_its_error_and_a_report(wild, tmp_path, capsys):
    from openenv_prime.cli import main
    from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer

    with ScriptedOpenAIServer(lambda request: "1") as model_url:
        code = main(["eval", "--base-url", wild("broken"), "--model", "m", "--model-base-url", model_url, "--family-field",
                     "level", "--per-family", "6", "--max-concurrency", "2", "--no-reset-check",
                     "--out", str(tmp_path / "report.json")])
    assert code == 1
    out, err = capsys.readouterr()
    assert "stopped before playing every task" in err and "model_dump" in err
    assert "in every one it answered every action sent with one same error" in " ".join(err.split())
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["errored"] == len(report["results"]) == 8 and "8 episodes in a row" in report["stopped"]
    # nothing was scored: n/a on the console, null in the report, never 0.0
    assert report["accuracy"] is None and all(f["accuracy"] is None for f in report["families"]) and "n/a" in out
    # every warning printed is in the report
    assert err.count("warning:") == len(report["warnings"]) >= 1
    assert all(" ".join(w.split()) in " ".join(err.split()) for w in report["warnings"])


def test_the_mlx_trainer_goes_on_past_episodes_the_environment_fails(wild, tmp_path):
    from openenv_prime.mlx_trainer.config import config_from_dict
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model
    from openenv_prime.mlx_trainer.training.loop import train

    config = config_from_dict({
        "seed": 0, "steps": 2, "plot": False, "model": {"path": str(build_tiny_model(tmp_path / "tiny"))},
        "grpo": {"group_size": 2, "tasks_per_step": 4, "max_new_tokens": 4},
        "environment": {"base_url": wild("flaky"), "train_split": "test", "test_split": "test", "family_field": "level",
                        "check_reset": False},
        "eval": {"every": 2, "tasks_per_family": 2}, "checkpoint": {"every": 2},
    })
    assert train(config, tmp_path / "run", progress=False).state.step == 2
    steps = [json.loads(line) for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    steps = [s for s in steps if s.get("type") == "step"]
    errored = sum(s["errored_episodes"] for s in steps)
    assert errored > 0 and all(s["errored_episodes"] <= s["unscored_episodes"] for s in steps)


def test_trl_gives_an_errored_rollout_no_reward_and_trains_on(wild, tmp_path):
    pytest.importorskip("trl", reason="TRL is not installed (the `trl` extra)")
    from trl import GRPOTrainer

    from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig
    from tests.trl_integration.tiny import grpo_args, tiny_model, tiny_tokenizer

    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=wild("flaky"), group_size=4, train_split="test",
                                          family_field="level", check_reset=False, sampler="sequential"))
    updates: list[tuple[int, list]] = []
    update = openenv.sampler.update
    openenv.sampler.update = lambda task, rewards, costs=None: updates.append((task.index, list(rewards))) or update(
        task, rewards, costs)
    args = grpo_args(tmp_path, max_steps=2)
    tokenizer = tiny_tokenizer()
    trainer = GRPOTrainer(model=tiny_model(tokenizer), reward_funcs=[openenv.reward], train_dataset=openenv.dataset(args),
                          args=args, processing_class=tokenizer)
    trainer.train()
    openenv.close()
    assert trainer.state.global_step == 2 and openenv.reward.groups == 4
    # sequential: tasks 0-3; the level-1 tasks (1, 3) failed every rollout: no reward, so no update
    assert [index for index, _ in updates] == [0, 2] and all(len(r) == 4 for _, r in updates)
    assert openenv.env.streak.total == 8 and TASKS[1]["level"] == 1
