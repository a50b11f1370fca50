"""Schema-driven actions and observations (client/prompts/actions, observations, mcp, render) on pydantic-made schemas."""

from __future__ import annotations

from enum import Enum, IntEnum
from typing import Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict

from openenv_prime.client import InvalidRequestError, observation_to_text, reply_to_action
from openenv_prime.client.prompts.render import EpisodeProtocol


class Move(str, Enum):
    UP = "UP"
    DOWN = "DOWN"
    LEFT = "LEFT"
    RIGHT = "RIGHT"


class Level(IntEnum):
    EASY = 1
    HARD = 2


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metadata: dict = {}


class MoveAction(_Action):
    action: Move


class LiteralAction(_Action):
    choice: Literal["rock", "paper", "scissors"]


class OptionalEnumAction(_Action):
    move: Optional[Move] = None


class LevelAction(_Action):
    level: Level


class PlanAction(_Action):
    kind: Literal["plan"] = "plan"  # a discriminator: filled in, never asked for
    move: Move
    steps: int
    note: str = ""


def schema(model: type[BaseModel]) -> dict:
    return model.model_json_schema()


@settings(deadline=None)  # the first example builds the schema validator; a loaded CI machine is slow at that
@given(move=st.sampled_from(list(Move)), case=st.sampled_from([str.upper, str.lower, str.title]),
       wrap=st.sampled_from(["{}", " {} \n", "```\n{}\n```", "```text\n{}\n```", '"{}"', "'{}'", "`{}`", "{}."]))
def test_enum_through_ref_takes_the_bare_reply_in_any_case_fenced_or_quoted(move, case, wrap):
    assert reply_to_action(wrap.format(case(move.value)), schema(MoveAction)) == {"action": move.value}


@pytest.mark.parametrize(("model", "reply", "action"), [
    (LiteralAction, "Paper", {"choice": "paper"}),
    (OptionalEnumAction, "left", {"move": "LEFT"}),
    (LevelAction, "2", {"level": 2}),
    (MoveAction, '{"action": "down"}', {"action": "DOWN"}),
])
def test_literals_optional_enums_and_int_enums(model, reply, action):
    assert reply_to_action(reply, schema(model)) == action


def test_instructions_list_the_allowed_values():
    assert EpisodeProtocol(schema(LiteralAction)).reply_format() == "Reply with exactly one of: rock, paper, scissors (nothing else)."
    with pytest.raises(InvalidRequestError, match="'lizard' is not one of the allowed values for 'choice': rock, paper, scissors"):
        reply_to_action("lizard", schema(LiteralAction))


def test_multi_field_action_shows_its_shape_and_is_validated_before_sending():
    protocol = EpisodeProtocol(schema(PlanAction))
    text = protocol.reply_format()
    assert text.splitlines()[0] == "Reply with only a JSON object for the action, with these fields:"
    assert '- "move" (one of "UP", "DOWN", "LEFT", "RIGHT", required)' in text
    assert '- "steps" (integer, required)' in text
    assert '"note"' not in text  # an optional field with a default is a setting: the server fills it in
    assert '"kind"' not in text and 'For example: {"move": "UP", "steps": 0}' in text
    assert protocol.action('{"move": "up", "steps": 2}') == {"kind": "plan", "move": "UP", "steps": 2}
    with pytest.raises(InvalidRequestError) as wrong:
        protocol.action('{"move": "UP", "steps": "two", "speed": 3}')
    assert "steps: 'two' is not of type 'integer'" in str(wrong.value)
    assert "'speed' was unexpected" in str(wrong.value)
    with pytest.raises(InvalidRequestError, match="steps: Field required"):
        protocol.action('{"move": "UP"}')


def test_a_free_text_field_needs_no_instructions_and_keeps_the_reply():
    chain_sum = {"properties": {"answer": {"type": "string"}, "metadata": {}}, "required": ["answer"]}
    protocol = EpisodeProtocol(chain_sum)
    assert protocol.free_text and protocol.instructions("Solve.") == "Solve." and protocol.instructions() is None
    assert protocol.action(" 42\n") == {"answer": " 42\n"}


def test_observations_show_every_field_a_template_or_the_metadata():
    grid = {"x": 1, "y": 2, "message": "Keep going...", "metadata": {}, "task": {"tier": 1}}
    assert observation_to_text(grid) == "Keep going...\nx: 1\ny: 2"
    assert observation_to_text(grid, "{message} ({x},{y})") == "Keep going... (1,2)"
    assert observation_to_text({"board": [[0, 1], [1, 0]], "legal_actions": [0, 1]}) == (
        "legal_actions: [0, 1]\nboard (2 rows x 2 columns; counts: 0 x2, 1 x2):\n0 1\n1 0"
    )
    echo_reset = {"metadata": {"status": "ready", "message": "Echo environment ready!"}}
    assert observation_to_text(echo_reset) == "Echo environment ready!"  # the metadata's text, not its bookkeeping
    assert observation_to_text({"metadata": {"status": "ready", "count": 2}}) == "status: ready\ncount: 2"
    assert observation_to_text({"metadata": {}}, metadata={"note": "top-level"}) == "top-level"
    assert observation_to_text(echo_reset, "{status}: {message}") == "ready: Echo environment ready!"
    with pytest.raises(KeyError, match="names 'z'.*fields are"):
        observation_to_text(grid, "{z}")


def test_mcp_results_errors_and_listings_read_as_text():
    ok = {"tool_name": "echo", "result": {"content": [{"type": "text", "text": "hi"}], "data": "hi", "is_error": False}, "error": None}
    assert observation_to_text(ok) == "hi"
    structured = {"tool_name": "len", "result": {"content": [], "data": {"length": 2}}, "error": None}
    assert observation_to_text(structured) == '{"length": 2}'
    failed = {"tool_name": "nope", "result": None, "error": {"error_type": "tool_not_found", "message": "Unknown tool: 'nope'"}}
    assert observation_to_text(failed) == "Tool 'nope' failed (tool_not_found): Unknown tool: 'nope'"
    listing = {"tools": [{"name": "echo", "description": "Echo it.", "input_schema": {"type": "object"}}], "metadata": {}}
    assert observation_to_text(listing) == 'Tools you can call:\n- echo: Echo it.\n  input schema: {"type": "object"}'


def test_mcp_tool_calls_in_the_forms_models_write():
    call_tool = {"properties": {"type": {"const": "call_tool"}, "tool_name": {"type": "string"}, "arguments": {"type": "object"}}}
    expected = {"type": "call_tool", "tool_name": "echo", "arguments": {"message": "hi"}}
    for reply in ('{"tool": "echo", "arguments": {"message": "hi"}}',
                  '```json\n{"tool_name": "echo", "arguments": {"message": "hi"}}\n```',
                  '{"function": {"name": "echo", "arguments": "{\\"message\\": \\"hi\\"}"}}'):
        assert reply_to_action(reply, call_tool) == expected
    with pytest.raises(InvalidRequestError, match="names no tool"):
        reply_to_action('{"arguments": {}}', call_tool)
