"""Action formats read from schemas shaped like tbench2_env's, finrl_env's and repl_env's (OpenEnv 685de411, their
pydantic schemas written out here), and action cards: what is offered, what a card changes, what a bad card says."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from openenv_prime.client.prompts.actions import ActionFormat
from openenv_prime.client.prompts.card import ActionCard
from openenv_prime.client.prompts.hidden import HiddenNames
from openenv_prime.client.prompts.numbers import numbers_note
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.client.wire.errors import InvalidRequestError

TBENCH2 = {  # tbench2_env's Tbench2Action as openenv publishes it: no legal values anywhere
    "description": "Action for interacting with a TB2 task session.",
    "properties": {
        "metadata": {"type": "object"},
        "action_type": {"default": "exec", "type": "string"},
        "command": {"default": "", "type": "string"},
        "session_id": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "block": {"default": True, "type": "boolean"},
        "wait_seconds": {"anyOf": [{"type": "number"}, {"type": "null"}], "default": None},
        "file_path": {"default": "", "type": "string"},
        "content": {"default": "", "type": "string"},
    },
    "type": "object",
}
REPL = {
    "description": "Action containing Python code to execute in the REPL.\n\nSupports multiple finalization patterns:\n"
                   "1. RLM-style: print('FINAL(answer)') in code\n3. Explicit: Set is_final=True with final_answer",
    "properties": {
        "code": {"default": "", "description": "Python code to execute", "type": "string"},
        "is_final": {"default": False, "type": "boolean"},
        "final_answer": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    },
    "type": "object",
}
FINRL_OBSERVATION = {
    "description": "Observation.\n\nAttributes:\n    state: Flattened state vector.\n           Structure: [balance, "
                   "prices..., holdings...]\n    date: Current trading date",
    "properties": {"state": {"items": {"type": "number"}, "type": "array"}, "date": {"type": "string"},
                   "answer": {"items": {"type": "number"}, "type": "array", "description": "the gold numbers"}},
    "type": "object",
}
CARD = {"about": "Run shell commands; evaluate when done.",
        "fields": {"action_type": {"description": "what to do", "values": ["exec", "evaluate"]},
                   "command": {"description": "the shell command"}},
        "fixed": {"block": True}, "example": {"action_type": "evaluate"}}


def test_tbench2s_action_type_and_command_are_offered_and_lead_the_example():
    form = ActionFormat.from_schema(TBENCH2)
    assert list(form.fields) == ["action_type", "command", "session_id", "wait_seconds"]
    assert form.settings == ("block", "file_path", "content") and form.field is None
    text = form.instructions()
    assert '- "action_type" (string, optional, default "exec")' in text
    assert 'For example: {"action_type": "exec", "command": "..."}' in text
    assert form.parse('{"action_type": "evaluate"}') == {"action_type": "evaluate"}


@pytest.mark.parametrize("spec, offered", [
    ({"type": "string", "enum": ["move", "look"], "default": "look"}, True),  # several legal values
    ({"type": "string", "default": "look"}, False),  # a `type` with no legal values stated: a setting
    ({"type": "string", "enum": ["move", "look"], "default": "look", "description": "server configuration, leave unset"},
     False),
])
def test_a_type_field_is_offered_when_it_has_several_legal_values(spec, offered):
    schema = {"properties": {"x": {"type": "integer"}, "type": spec}, "required": ["x"], "type": "object"}
    assert ("type" in ActionFormat.from_schema(schema).fields) is offered


def test_the_prompt_never_tells_the_model_to_set_a_field_it_cannot():
    form = ActionFormat.from_schema(REPL)
    assert form.free_text and form.field == "code"
    text = form.instructions()
    assert "is_final" not in text and "final_answer" not in text and "print('FINAL(answer)')" in text


def test_a_card_replaces_the_format_the_prompt_and_the_action_sent():
    form = ActionFormat.from_schema(TBENCH2, card=ActionCard.model_validate(CARD))
    text = form.instructions()
    assert text.startswith("The environment describes its action:\nRun shell commands; evaluate when done.")
    assert '- "action_type" (string, one of "exec", "evaluate", optional, default "exec"): what to do' in text
    assert 'For example: {"action_type": "evaluate"}' in text and "session_id" not in text
    assert form.parse('{"action_type": "EVALUATE"}') == {"block": True, "action_type": "evaluate"}
    with pytest.raises(InvalidRequestError, match="not one of the allowed values for 'action_type': \"exec\", \"evaluate\""):
        form.parse('{"action_type": "kill"}')


def test_a_card_with_a_reply_field_takes_a_bare_reply():
    card = ActionCard(fields={"command": {}}, fixed={"action_type": "exec"})
    form = ActionFormat.from_schema(TBENCH2, card=card)
    assert form.free_text and form.parse("ls -la") == {"action_type": "exec", "command": "ls -la"}


@pytest.mark.parametrize("card, message", [
    ({"fields": {"cmd": {}}}, "the action card names ['cmd'], which the server's action schema lacks"),
    ({"fields": {"command": {}}, "fixed": {"block": "yes"}}, "fixed value \"yes\" for 'block' does not fit"),
    ({"fields": {"wait_seconds": {"values": ["soon"]}}}, "legal value \"soon\" for 'wait_seconds' does not fit"),
    ({"fields": {"action_type": {"values": ["exec"]}}, "example": {"action_type": "kill"}}, "example {\"action_type\": \"kill\"} is no valid reply"),
])
def test_a_card_that_does_not_fit_the_schema_says_what_is_wrong(card, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        ActionFormat.from_schema(TBENCH2, card=ActionCard.model_validate(card))


def test_a_card_is_read_from_toml_or_json_and_refused_beside_action_fields(tmp_path):
    toml = tmp_path / "card.toml"
    toml.write_text('example = {action_type = "exec", command = "ls"}\n[fields.action_type]\nvalues = ["exec", '
                    '"evaluate"]\n[fields.command]\n[fixed]\nblock = true\n')
    settings = PromptSettings(action_card=str(toml))
    assert settings.action_card.fixed == {"block": True} and list(settings.action_card.fields) == ["action_type", "command"]
    (tmp_path / "card.json").write_text(settings.action_card.to_json())
    assert PromptSettings(action_card=tmp_path / "card.json").action_card == settings.action_card
    with pytest.raises(ValidationError, match="leave action_field and action_fields unset"):
        PromptSettings(action_card=str(toml), action_fields=["block"])
    (tmp_path / "bad.toml").write_text("[fields\n")
    with pytest.raises(ValidationError, match="bad.toml is not valid TOML"):
        PromptSettings(action_card=str(tmp_path / "bad.toml"))
    with pytest.raises(ValidationError, match="both offers and fixes \\['block'\\]"):
        ActionCard(fields={"block": {}}, fixed={"block": True})


@given(st.sampled_from([TBENCH2, REPL]))
def test_the_inferred_format_written_as_a_card_gives_its_example_back(schema):
    form = ActionFormat.from_schema(schema)
    again = ActionFormat.from_schema(schema, card=ActionCard.model_validate_json(form.as_card().to_json()))
    assert list(again.fields) == list(form.fields) and again.example() == form.example()
    assert again.parse(json.dumps(form.example())) == form.parse(json.dumps(form.example()))


def test_what_the_observations_numbers_mean_is_said_and_never_of_a_hidden_field():
    note = numbers_note(FINRL_OBSERVATION, HiddenNames())
    assert note == ("The environment describes the numbers it shows:\n"
                    "- `state`: Flattened state vector. Structure: [balance, prices..., holdings...]")
    sized = {"properties": {"cells": {"type": "array", "items": {"type": "integer"}, "minItems": 9, "maxItems": 9,
                                      "description": "the board, row by row"}}}
    assert numbers_note(sized, HiddenNames()) == ("The environment describes the numbers it shows:\n"
                                                  "- `cells` (exactly 9 items): the board, row by row")
    assert numbers_note({"properties": {"state": {"type": "array", "items": {"type": "number"}}}}, HiddenNames()) == ""
