"""Episodes of the grid world and the MCP environment through the client (EpisodeSession + EpisodeProtocol),
under openenv 0.4.1 and 0.10.0: the texts the model is shown, the actions its replies become, the rewards."""

from __future__ import annotations

import asyncio
import json

import pytest

from openenv_prime.client import EpisodeSession, InvalidRequestError, TaskAPIClient
from openenv_prime.client.prompts.render import EpisodeProtocol
from openenv_prime.evaluation import EvalConfig, OpenAIPolicy, run_eval
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer
from tests.play.players import grid_move, grid_rule, mcp_rule

GRID_TASKS = 6


def _protocol(url: str, **kwargs) -> EpisodeProtocol:
    with TaskAPIClient(url) as api:
        return EpisodeProtocol(api.action_schema(), **kwargs)


async def _walk(url: str, protocol: EpisodeProtocol, index: int):
    """Plays one grid task with the player's moves; returns the texts shown and the rewards."""
    async with EpisodeSession(url) as session:
        opening = await protocol.start(session, split="test", index=index)
        shown, rewards, result = [opening.text], [], opening.result
        while not result.done:
            reply = grid_move(shown[0], shown[-1]).lower()
            result = await session.step(protocol.action(reply, opening))
            rewards.append(result.reward)
            shown.append(protocol.text(result))
        return shown, rewards


def test_grid_world_enum_replies_and_shaped_rewards(grid_any):
    protocol = _protocol(grid_any)
    assert not protocol.mcp and protocol.text_field == "action"
    assert protocol.reply_format() == (
        "The action's `action` field: The direction to move.\nReply with exactly one of: UP, DOWN, LEFT, RIGHT (nothing else)."
    )
    with TaskAPIClient(grid_any) as api:
        tiers = [task["tier"] for task in api.get_task_range("test")]

    async def play():
        return await asyncio.gather(*(_walk(grid_any, protocol, i) for i in range(GRID_TASKS)))

    episodes = asyncio.run(play())
    first_shown, _ = episodes[0]
    assert first_shown[0] == "Reach the goal at [1, 0].\nx: 0\ny: 0"  # message, then the position
    assert first_shown[-1] == "You found the goal!\nx: 1\ny: 0"
    for tier, (shown, rewards) in zip(tiers, episodes):
        assert rewards == [-0.1] * (tier - 1) + [1.0]  # the shortest walk: one penalty per step but the last
        assert len(shown) == tier + 1


def test_grid_world_rejects_a_bad_move_before_sending_it(grid_any):
    protocol = _protocol(grid_any)
    for reply in ("north", "UP DOWN", '{"action": "sideways"}', ""):
        with pytest.raises(InvalidRequestError, match="UP, DOWN, LEFT, RIGHT"):
            protocol.action(reply)
    assert protocol.action("```\nDown\n```") == {"action": "DOWN"}


def test_grid_world_template_and_field(grid_any):
    async def opening(protocol):
        async with EpisodeSession(grid_any) as session:
            return (await protocol.start(session, split="test", index=2)).text

    assert asyncio.run(opening(_protocol(grid_any, observation_field="x"))) == "0"
    templated = _protocol(grid_any, observation_field="{message} You are at ({x}, {y}).")
    assert asyncio.run(opening(templated)) == "Reach the goal at [1, 1]. You are at (0, 0)."


def test_mcp_environment_lists_tools_calls_them_and_shows_results(mcp_any):
    protocol = _protocol(mcp_any)
    assert protocol.mcp and '"tool"' in protocol.reply_format()

    async def play():
        async with EpisodeSession(mcp_any) as session:
            opening = await protocol.start(session, split="test", index=2)
            shown = [opening.text]
            with pytest.raises(InvalidRequestError, match="no tool 'get_answer'.*get_question"):
                protocol.action('{"tool": "get_answer"}', opening)
            with pytest.raises(InvalidRequestError, match="'seventeen' is not of type 'integer'"):
                protocol.action('{"tool": "submit_answer", "arguments": {"answer": "seventeen"}}', opening)
            asked = await session.step(protocol.action('{"tool": "get_question", "arguments": {}}', opening))
            shown.append(protocol.text(asked))
            call = {"name": "submit_answer", "arguments": '{"answer": 42}'}  # OpenAI-style: arguments as a string
            verdict = await session.step(protocol.action(json.dumps(call), opening))
            shown.append(protocol.text(verdict))
            return opening, shown, asked, verdict

    opening, shown, asked, verdict = asyncio.run(play())
    assert [tool.name for tool in opening.tools] == ["get_question", "submit_answer"]
    assert opening.tools[1].input_schema["properties"]["answer"]["type"] == "integer"
    # the reset's data sat in metadata: it is shown, never "{}"; the tools follow with their input schemas
    intro, tools = shown[0].split("\n\n")
    assert intro == "Use the tools to answer the question."  # the metadata's text; its status is bookkeeping
    assert tools.splitlines()[0] == "Tools you can call:"
    assert "- submit_answer: Submit the final answer (an integer); this ends the episode." in tools
    assert '"answer": {"type": "integer"}' in tools
    assert shown[1:] == ["What is 17 + 25?", "correct"]
    assert (asked.done, verdict.done, verdict.reward) == (False, True, 1.0)



def test_eval_plays_the_grid_world_under_each_openenv(grid_any):
    with ScriptedOpenAIServer(grid_rule()) as model_url:
        grid = run_eval(EvalConfig(base_url=grid_any, per_family=2, max_steps=8), OpenAIPolicy(model_url, "scripted"))
    assert {r.key: round(r.reward, 6) for r in grid.results} == {
        "grid-a": 1.0, "grid-b": 1.0, "grid-c": 0.9, "grid-d": 0.9, "grid-e": 0.8, "grid-f": 0.8
    }


def test_eval_plays_the_mcp_environment_under_each_openenv(mcp_any):
    with ScriptedOpenAIServer(mcp_rule(wrong_for=frozenset({"58 + 39"}))) as model_url:
        tools = run_eval(EvalConfig(base_url=mcp_any, per_family=2, max_steps=4), OpenAIPolicy(model_url, "scripted"))
    assert {r.key: (r.reward, r.steps, r.invalid_actions) for r in tools.results} == {
        "sum-1": (1.0, 2, 0), "sum-2": (1.0, 2, 0), "sum-3": (1.0, 2, 0), "sum-4": (0.0, 2, 0)
    }
    assert tools.accuracy_by_family() == {"0": 1.0, "1": 0.5}
