"""The environment's own instructions win: where an environment states a system prompt (an observation field, a system
message of an `openenv import`-ed verifiers prompt), it is taken out of the first user message and sent as the system
prompt in place of ours, followed by the reply format where that adds something; ORS's text blocks read as text, and
a tool without a description says what it takes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from openenv_prime.client import observation_to_text
from openenv_prime.client.prompts import mcp
from openenv_prime.client.prompts.observations import render
from openenv_prime.client.prompts.own_system import declared, for_split, take_system
from openenv_prime.client.prompts.render import EpisodeProtocol, Opening
from openenv_prime.client.wire.session import StepResult

MCP_SCHEMA = {"properties": {"type": {"const": "call_tool"}, "tool_name": {"type": "string"}, "arguments": {"type": "object"}}}
TEXT_SCHEMA = {"properties": {"reply": {"type": "string"}}, "required": ["reply"]}
ENUM_SCHEMA = {"properties": {"move": {"enum": ["UP", "DOWN"], "description": "Where to go."}}, "required": ["move"]}
VERIFIERS_RESET = {"metadata": {  # what an `openenv import`-ed verifiers environment's reset sends
    "source_type": "verifiers", "task_spec": {"question": "What is 2+3?", "answer": "5"},
    "prompt": [{"role": "system", "content": "Reply inside <answer></answer> tags."}, {"role": "user", "content": "What is 2+3?"}],
}}
ORS_RESET = {"metadata": {  # what an `openenv import`-ed ORS environment's reset sends (the ORS quick start's MathEnv)
    "source_type": "ors", "original_env_class": "MathEnv", "task_spec": {"question": "What is 2+2?", "answer": "4"},
    "prompt": [{"text": "What is 2+2?", "detail": None, "type": "text"}],
}}


def opening(schema: dict, observation: dict) -> Opening:
    return EpisodeProtocol(schema).opening(StepResult(observation, None, False))


def test_a_verifiers_system_message_becomes_the_system_prompt_and_leaves_the_user_text():
    first = opening(MCP_SCHEMA, VERIFIERS_RESET)
    assert first.system == "Reply inside <answer></answer> tags." and first.text == "What is 2+3?"
    assert "5" not in first.text and "[system]" not in first.text


def test_system_fields_are_found_in_the_observation_its_metadata_and_the_frames_metadata_once_each():
    observation = {"system_prompt": "Be exact.", "question": "Q?", "metadata": {"instructions": "Use tags."}}
    system, rest, metadata = take_system(observation, {"system": "Be exact."})
    assert system == "Be exact.\n\nUse tags." and rest == {"question": "Q?", "metadata": {}} and metadata == {}
    assert observation == {"system_prompt": "Be exact.", "question": "Q?", "metadata": {"instructions": "Use tags."}}
    assert take_system({"question": "Q?", "system_prompt": "  "}, {}) == (None, {"question": "Q?"}, {})


def test_only_the_first_observation_gives_up_its_system_text():
    observation = {"system_prompt": "Use tags.", "question": "Q?"}
    assert render(observation, own_system=True).system == "Use tags."
    assert render(observation, own_system=True).text == "Q?"
    assert observation_to_text(observation) == "Q?\nsystem_prompt: Use tags."  # a later observation shows it


def test_an_observation_with_nothing_but_instructions_says_where_they_went():
    assert opening(TEXT_SCHEMA, {"instructions": "Say hello."}).text == "(the environment's instructions are the system prompt)"


def test_ors_text_blocks_read_as_text_without_the_wrappers_labels():
    first = opening(MCP_SCHEMA, ORS_RESET)
    assert first.text == "What is 2+2?" and first.system is None


def test_the_environments_instructions_replace_ours_and_the_reply_format_follows():
    protocol = EpisodeProtocol(ENUM_SCHEMA)
    own = opening(ENUM_SCHEMA, {"system_prompt": "Walk to the exit.", "position": 3})
    system = protocol.system_prompt("Reply with only the final answer, nothing else.", own)
    assert system == f"Walk to the exit.\n\n{protocol.reply_format()}"
    assert protocol.system_prompt(None, own) == system  # None: nothing of ours, the environment's still sent
    plain = opening(ENUM_SCHEMA, {"position": 3})
    assert protocol.system_prompt("Solve it.", plain) == f"Solve it.\n\n{protocol.reply_format()}"
    assert protocol.system_prompt(None, plain) is None
    assert protocol.prompt("Solve it.", [{"role": "user", "content": own.text}], own) == [
        {"role": "system", "content": system}, {"role": "user", "content": "position: 3"}]


def test_a_tool_call_environments_instructions_are_joined_to_the_tool_call_format():
    protocol = EpisodeProtocol(MCP_SCHEMA)
    system = protocol.system_prompt("Reply with only the final answer, nothing else.", opening(MCP_SCHEMA, VERIFIERS_RESET))
    assert system.startswith("Reply inside <answer></answer> tags.\n\n" + mcp.instructions())
    assert "as the tool call's arguments" in system and "final answer" not in system


def test_a_reply_format_the_environment_states_already_is_not_repeated():
    protocol = EpisodeProtocol(ENUM_SCHEMA)
    own = opening(ENUM_SCHEMA, {"system_prompt": f"Walk.\n{protocol.reply_format()}"})
    assert protocol.system_prompt("Ours.", own) == own.system


@given(base=st.text(min_size=1, max_size=40).filter(lambda t: t.strip() and "<" not in t),
       own=st.text(min_size=1, max_size=80).filter(str.strip))
def test_whoever_brings_instructions_the_environments_are_sent_and_ours_only_without_them(base, own):
    base = f"OURS {base}"  # never a part of the environment's text
    for schema in (TEXT_SCHEMA, ENUM_SCHEMA, MCP_SCHEMA):
        protocol = EpisodeProtocol(schema)
        system = protocol.system_prompt(base, opening(schema, {"system_prompt": own, "question": "Q?"}))
        assert system.startswith(own.strip()) and base not in system
        assert protocol.system_prompt(base, opening(schema, {"question": "Q?"})).startswith(base)


def test_a_tool_without_a_description_says_what_it_takes():
    text = mcp.tools_text([
        mcp.Tool("submit", "", {"properties": {"answer": {"type": "string"}, "note": {}}, "required": ["answer"]}),
        mcp.Tool("reset_board", "", {}),
    ])
    assert "- submit: (no description) takes `answer` (string, required), `note` (optional)" in text
    assert "- reset_board: (no description; it takes no arguments)" in text


def test_a_splits_declaration_is_the_system_text_where_the_observation_states_none():
    entries = [{"name": "train", "type": "train", "system_prompt": "Use tags."}, {"name": "test", "type": "test",
               "instructions": "Use tags."}, {"name": "extra", "type": "validation"}]
    assert declared(entries) == {"train": "Use tags.", "test": "Use tags."}
    assert for_split({"train": "A.", "test": "B."}, "test") == "B." and for_split({"train": "A."}, "extra") is None
    assert for_split({"train": "A.", "test": "A."}, None) == "A."  # reset by task spec: only when they agree
    assert for_split({"train": "A.", "test": "B."}, None) is None
    protocol = EpisodeProtocol(TEXT_SCHEMA, declared_system={"test": "Use tags."})
    assert protocol.opening(StepResult({"question": "Q?"}, None, False), "test").system == "Use tags."
    own = protocol.opening(StepResult({"question": "Q?", "system_prompt": "Mine."}, None, False), "test")
    assert own.system == "Mine."  # the episode's own text comes first
