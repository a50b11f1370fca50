"""What the model is told and shown, from schemas and observations shaped like OpenEnv environments we did not write
(tests/play/lookalike_envs.py): descriptions, legal values stated and read, bounds, defaults, settings left out;
grids, tensors, budgets, repeated texts, legal actions, templates; hidden fields and the settings that carry them."""

from __future__ import annotations

import json
from typing import Annotated, Literal, Optional

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from openenv_prime.client import InvalidRequestError, observation_to_text
from openenv_prime.client.prompts.hidden import scrub
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.client.prompts.render import EpisodeProtocol
from openenv_prime.evaluation import EvalConfig
from tests.play.lookalike_envs import CatchAction, FireAction, GuessAction, SnakeAction


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metadata: dict = {}


def protocol(model: type[BaseModel], **settings) -> EpisodeProtocol:
    return EpisodeProtocol(model.model_json_schema(), settings=PromptSettings(**settings))


# ---- actions ---------------------------------------------------------------------------------------------------
def test_values_a_docstring_states_are_stated_and_read_but_never_enforced():
    fire = protocol(FireAction)
    text = fire.reply_format()
    assert text.startswith("The environment describes its action:\nWhat the crew does this step.\n")
    assert '- "action" (string, one of "break", "water", "wait" as the description says, required)' in text
    assert '- "x" (integer, optional, default null)' in text and '- "y" (integer, optional, default null)' in text
    assert 'For example: {"action": "break"}' in text  # the required fields only
    for reply, action in [("water", {"action": "water"}), ("Water.", {"action": "water"}),
                          ("drop water", {"action": "water"}), ("`wait`", {"action": "wait"}),
                          ('{"action": "WATER", "x": 3, "y": 4}', {"action": "water", "x": 3, "y": 4}),
                          ("burn it all", {"action": "burn it all"})]:  # prose is no schema: the server decides
        assert fire.action(reply) == action
    with pytest.raises(InvalidRequestError, match="x: 'three' is not valid"):
        fire.action('{"action": "water", "x": "three"}')


def test_two_descriptions_of_one_field_state_no_set_but_the_values_both_allow_and_their_names_still_read():
    snake = protocol(SnakeAction)
    text = snake.reply_format()
    assert "Reply with exactly one of" not in text  # relative and absolute steering differ: the description says which
    assert "0 = keep going (straight on)" in text and "4 = up" in text
    assert text.endswith("Values allowed in every case the description gives: 0, 1, 2.\n"  # legal in either mode
                         "Reply with only a JSON value (integer) for the action's `action` field.\n"
                         "A name the description gives a value also works, e.g. 'keep going' for 0.")
    for reply, value in [("2", 2), ("turn right", 2), ("Turn left.", 1), ("1 (turn left)", 1), ("up", 4),
                         ('{"action": 0}', 0)]:
        assert snake.action(reply) == {"action": value}
    with pytest.raises(InvalidRequestError, match="not a JSON value for the 'action' field"):
        snake.action("dance")
    with pytest.raises(InvalidRequestError):
        snake.action("2 (turn left)")  # a number and a name that disagree


class Steer(_Action):
    """Where to go.

    On foot:
        way: "left", "right" or "jump"
    By boat:
        way: "left", "right", "anchor"
    speed: integer
    """

    way: str
    speed: int


class Modes(_Action):
    """One of two games.

    Cards: card: one of [1, 2, 3]
    Dice: card: one of [4, 5, 6]
    """

    card: int


def test_values_every_case_allows_are_stated_in_a_json_object_and_disjoint_cases_state_none():
    text = protocol(Steer).reply_format()
    assert '- "way" (string, one of "left", "right" in every case the description gives, required)' in text
    assert 'For example: {"way": "left", "speed": 0}' in text
    assert protocol(Steer).action('{"way": "Jump", "speed": 2}') == {"way": "jump", "speed": 2}  # still read, not enforced
    modes = protocol(Modes).reply_format()
    assert "in every case" not in modes and "Values allowed" not in modes  # 1-3 and 4-6 share no value
    assert modes.endswith("Reply with only a JSON value (integer) for the action's `card` field.")


class Shots(_Action):
    """A move in a shooting game.

    shot: one of
        0 = hold
        1 = fire
    """

    shot: int


class Named(_Action):
    """The message, e.g. "hello" or "bye" (examples, not the only values)."""

    word: str = Field(..., description='The word to say, such as "yes" or "no".')
    mood: str = Field(..., description='How to say it: "calm" or "loud".')


def test_one_set_of_values_is_stated_and_examples_are_not_values():
    text = protocol(Shots).reply_format()
    assert text.endswith("Reply with exactly one of these values (nothing else): 0 (hold), 1 (fire).")
    assert protocol(Shots).action("fire") == {"shot": 1}
    named = protocol(Named).reply_format()
    assert '"word" (string, required)' in named  # "such as" and "e.g." give examples
    assert '"mood" (string, one of "calm", "loud" as the description says, required): How to say it' in named


def test_settings_with_defaults_are_left_out_unless_named_and_their_description_lines_too():
    catch = protocol(CatchAction)
    text = catch.reply_format()
    assert "game_name" not in text and "game_params" not in text and "action_id: Which action" in text
    assert text.endswith("Reply with only a JSON value (integer) for the action's `action_id` field.")
    assert catch.action("2") == {"action_id": 2}  # the server fills in game_name and game_params
    named = protocol(CatchAction, action_fields=["game_name"]).reply_format()
    assert '- "game_name" (string, optional, default "catch")' in named and "game_params" not in named
    with pytest.raises(ValueError, match=r"action_fields names \['speed'\], which the action schema lacks"):
        protocol(CatchAction, action_fields=["speed"])


class Walk(_Action):
    """A step in a maze.

    seed: the environment's setting, do not set
        (it picks the maze)
    """

    move: Literal["north", "south"] = Field(..., description="Where to go.")
    steps: Optional[int] = Field(None, description="How far; one step when left out.")
    difficulty: Optional[str] = Field(None, description="Server configuration, leave unset.")
    seed: Optional[int] = None


class Move(_Action):
    move: Literal["north", "south"]
    difficulty: Optional[str] = Field(None, description="Server configuration, leave unset.")


def test_a_field_described_as_configuration_is_never_offered_and_the_example_shows_the_required_fields_only():
    walk = protocol(Walk)
    text = walk.reply_format()
    assert '- "steps" (integer, optional, default null): How far' in text  # an optional move: offered, not exemplified
    assert "difficulty" not in text and "seed" not in text and "picks the maze" not in text
    assert 'For example: {"move": "north"}' in text
    assert walk.action('{"move": "south", "steps": 2}') == {"move": "south", "steps": 2}
    named = protocol(Walk, action_fields=["difficulty"]).reply_format()
    assert '- "difficulty" (string, optional, default null): Server configuration' in named
    assert 'For example: {"move": "north"}' in named
    move = protocol(Move)  # the case: once "difficulty" is not offered, a bare value is the action
    assert move.reply_format().endswith("Reply with exactly one of: north, south (nothing else).")
    assert "difficulty" not in move.reply_format() and move.action("north") == {"move": "north"}


def test_only_descriptions_that_call_a_field_configuration_make_it_a_setting():
    from openenv_prime.client.prompts.described import configures

    for said in ["Server configuration, leave unset.", "Environment setting.", "Do not set: the server picks it.",
                 "For internal use.", "Leave this empty.", "env-side config"]:
        assert configures("x", said, None), said
    for said in [None, "Optional coordinates.", "The configuration of pieces to place.", "Do not change lanes if true.",
                 "Set this to move faster."]:
        assert not configures("x", said, None), said
    assert configures("x", None, "A move.\n\nx: server setting, leave unset\ny: where to go")
    assert not configures("y", None, "A move.\n\nx: server setting, leave unset\ny: where to go")


class Bounded(_Action):
    column: int = Field(..., ge=0, le=6, description="The column to drop a piece in.")
    word: Annotated[str, Field(min_length=1, max_length=3)] = "a"
    share: float = Field(..., gt=0, lt=1)
    cells: list[int] = Field(..., min_length=2, max_length=4)
    mode: Literal["fast", "slow"]


def test_bounds_and_defaults_are_stated_and_checked():
    text = protocol(Bounded, action_fields=["word"]).reply_format()
    assert '- "column" (integer, 0 <= value <= 6, required): The column to drop a piece in.' in text
    assert '- "word" (string, 1 to 3 characters, optional, default "a")' in text
    assert '- "share" (number, 0 < value < 1, required)' in text
    assert '- "cells" (array of integer, 2 to 4 items, required)' in text
    assert '- "mode" (one of "fast", "slow", required)' in text
    example = json.loads(text.split("For example: ")[1].splitlines()[0])
    assert example["column"] == 0 and example["mode"] == "fast"
    with pytest.raises(InvalidRequestError, match="column: 7 is greater than the maximum of 6"):
        protocol(Bounded).action('{"column": 7, "share": 0.5, "cells": [1, 2], "mode": "fast"}')
    one = EpisodeProtocol({"properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9}}, "required": ["n"]})
    assert one.reply_format() == "Reply with only a JSON value (integer, 1 <= value <= 9) for the action's `n` field."


class CodeAction(_Action):
    """Represents a single code execution request."""

    code: str = Field(description="Python code to execute")


def test_a_free_text_action_is_described_and_the_reply_kept_verbatim():
    guess = protocol(GuessAction)
    assert guess.free_text and guess.reply_format() == (
        "The environment describes its action:\nThe player's message to the game.\n\n"
        "Your reply is sent, as written, as the action's `message` field."
    )
    assert guess.action(' {"message": "x"} ') == {"message": ' {"message": "x"} '}  # never decoded
    code = protocol(CodeAction)
    assert code.free_text and code.instructions("Solve the task.") == (
        "Solve the task.\n\nThe environment describes its action:\nRepresents a single code execution request.\n\n"
        "Your reply is sent, as written, as the action's `code` field: Python code to execute."
    )
    assert code.action("print(1)") == {"code": "print(1)"}


@pytest.mark.parametrize("description", [
    None, "The model's reply to the question", "The reply to the question.", "The answer",
    "The model's reply; its final number is taken as the answer",
])
def test_a_free_text_field_that_is_only_the_reply_adds_nothing(description):
    said = {"description": description} if description else {}
    protocol_ = EpisodeProtocol({"properties": {"answer": {"type": "string", **said}}, "required": ["answer"]})
    assert protocol_.free_text and protocol_.instructions("Solve.") == "Solve."


def test_the_reasoning_gym_and_chain_sum_prompts_stay_as_trained():
    from openenv_prime.envs.reasoning_gym_tiers.environment import ChainSumAction, ReasoningGymAction

    for action in (ReasoningGymAction, ChainSumAction):
        assert EpisodeProtocol(action.model_json_schema()).instructions("Reply with only the final number.") == (
            "Reply with only the final number."
        )


# ---- observations ----------------------------------------------------------------------------------------------
def fire_observation(burning: list[tuple[int, int]], size: int = 6) -> dict:
    grid = [1] * (size * size)
    for row, column in burning:
        grid[row * size + column] = 2
    return {"grid": grid, "width": size, "height": size, "step": 0, "wind_dir": "NE", "humidity": 0.25, "metadata": {}}


def test_a_flat_array_with_a_stated_shape_is_a_grid_and_rare_values_are_located():
    text = observation_to_text(fire_observation([(1, 4), (3, 0)]))
    assert text.splitlines()[:3] == ["grid (6 rows x 6 columns; counts: 1 x34, 2 x2):", "1 1 1 1 1 1", "1 1 1 1 2 1"]
    assert "2 at (row, column): (1, 4), (3, 0)" in text and text.endswith("wind_dir: NE\nhumidity: 0.25")
    no_shape = {"cells": [0, 1] * 60, "note": "hi"}  # no width/height: not a grid, and too long to list
    assert observation_to_text(no_shape) == "cells: a 120 array of numbers from 0 to 1 (50% zeros; summarised, not shown)\nnote: hi"
    tensor = {"frames": [[[0.0, 1.0]] * 3] * 2}
    assert observation_to_text(tensor) == "frames: a 2x3x2 array of numbers from 0 to 1 (50% zeros; summarised, not shown)"


def test_a_text_repeated_in_messages_is_shown_once_and_message_lists_read_as_text():
    rules = "You are Player 0 in Guess The Number. Enter your guess in brackets."
    reset = {"prompt": rules, "messages": [{"sender_id": -1, "content": rules, "category": "PROMPT"}],
             "current_player_id": 0, "metadata": {"raw_messages": [{"content": rules}]}}
    assert observation_to_text(reset) == f"{rules}\ncurrent_player_id: 0"
    turn = {"prompt": "GuessNumber-v0", "messages": [{"content": "[10]", "category": "PLAYER_ACTION"},
                                                    {"content": "Your guess of 10 is lower.", "category": "GAME"}]}
    assert observation_to_text(turn) == "GuessNumber-v0\n[PLAYER_ACTION] [10]\n[GAME] Your guess of 10 is lower."


def test_legal_actions_come_right_after_the_text_also_from_metadata_and_are_never_cut():
    observation = {"message": "Your move.", "board": "x" * 3000, "legal_moves": ["e2e4", "d2d4"],
                   "metadata": {"valid_actions": [3, 4]}}
    text = observation_to_text(observation, budget=500)
    assert text.splitlines()[:3] == ["Your move.", 'legal_moves: ["e2e4", "d2d4"]', "valid_actions: [3, 4]"]
    assert "characters of board left out ...]" in text and text.endswith("xxx") and len(text) <= 500  # cut, not dropped


def test_a_field_too_long_for_the_budget_is_cut_with_its_end_and_an_error_is_never_left_out():
    from openenv_prime.client.prompts.observations import MIN_CUT, render

    failing = "Traceback (most recent call last):\n" + "  File ...\n" * 800 + "NameError: The variable `true` is not defined"
    repl = {"result": failing, "iteration": 3, "success": False}  # repl_env after a failing step
    text = observation_to_text(repl)
    assert len(text) <= 4000 and text.startswith("result: Traceback") and "characters of result left out ...]" in text
    assert "The variable `true` is not defined" in text and "iteration: 3" in text  # the end, and the small fields
    cause = "z" * 400 + " the cause"
    shown = render({"message": "Step failed.", "log": "y" * 700, "stderr": cause}, budget=1000)  # the error's room first
    assert f"stderr: {cause}" in shown.text and "characters of log left out ...]" in shown.text
    crowded = {"message": "m" * 980, "board": "b" * 400, "map": "p" * 400, "log": "g" * 400, "stderr": "the cause"}
    tight = render(crowded, budget=1000)  # under MIN_CUT characters of room each: left out, the error kept
    assert tight.text.endswith("[... 3 fields left out: board, map, log]") and "stderr: the cause" in tight.text
    assert "budget" not in tight.text and len(tight.text) <= 1000 and 3 * MIN_CUT > 250
    (note,) = tight.notes  # the operator hears of it, the model does not
    assert note == ("observation fields left out to fit the observation budget (1,000 characters): board, map, log; a "
                    "larger observation budget shows them")


def test_over_the_budget_the_text_keeps_its_head_and_tail_and_says_how_much_is_left_out():
    long = "start " + "middle " * 2000 + "the end"
    text = observation_to_text({"question": long, "level": 3}, budget=1000)
    assert text.startswith("start middle") and "the end\n" in text and len(text) <= 1000
    assert "characters of question left out ...]" in text and text.endswith("level: 3")
    assert observation_to_text({"question": long}, budget=300).endswith("the end")


def test_metadata_only_observations_show_their_text_and_never_the_task_spec():
    imported = {"metadata": {"source_type": "verifiers", "prompt": [{"role": "user", "content": "What is 2+2?"}],
                             "task_spec": {"question": "What is 2+2?", "answer": "4"}}}
    assert observation_to_text(imported) == "What is 2+2?"
    chat = {"metadata": {"prompt": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}]}}
    assert observation_to_text(chat) == "[system] Be brief.\n[user] Hi?"


def test_templates_with_grid_text_json_and_python_specs():
    catch = {"info_state": [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], "legal_actions": [0, 1, 2]}
    assert observation_to_text(catch, "Legal: {legal_actions}\n{info_state:grid=4}") == "Legal: [0, 1, 2]\n0 1 0 0\n0 0 0 1"
    fire = fire_observation([(0, 1)], size=2)
    assert observation_to_text(fire, "Wind {wind_dir}, humidity {humidity:.0%}.\n{grid:grid}") == "Wind NE, humidity 25%.\n1 2\n1 1"
    turn = {"messages": [{"content": "[10]", "category": "A"}, {"content": "lower", "category": "B"}]}
    assert observation_to_text(turn, "{messages:text}") == "[A] [10]\n[B] lower"
    assert observation_to_text({"x": {"a": 1}}, "{x:json} {x[a]}") == '{"a": 1} 1'
    for bad, error in [("{x.__class__}", "attribute access"), ("{}", "positional"), ("{grid:grid=5}", "no grid")]:
        with pytest.raises(ValueError, match=error):
            observation_to_text(fire, bad)
    with pytest.raises(KeyError, match="names 'nope', which the observation lacks"):
        observation_to_text(fire, "{nope}")


# ---- hidden fields and the settings --------------------------------------------------------------------------------
def test_scrub_finds_hidden_fields_at_any_depth_and_in_json_strings_and_leaves_the_input_alone():
    value = {"question": "q", "groundTruth": "g1", "task_spec": {"answer": "g2", "level": 1},
             "info": json.dumps({"solution": "g3", "source": "s"}), "hints": [{"Target": "g4", "text": "t"}]}
    before = json.dumps(value)
    cleaned = scrub(value)
    assert json.dumps(value) == before
    assert cleaned.value == {"question": "q", "task_spec": {"level": 1}, "info": '{"source": "s"}', "hints": [{"text": "t"}]}
    assert sorted(cleaned.removed) == ["groundTruth", "hints[0].Target", "info.solution", "task_spec.answer"]
    assert scrub({"target": [4, 4]}, hidden=["answer"]).value == {"target": [4, 4]}  # a navigation env's own target


def test_settings_refuse_a_template_that_names_a_hidden_field_and_say_how_to_allow_it():
    with pytest.raises(ValidationError, match="names 'answer', a field that may hold the answer") as error:
        EvalConfig(observation_template="{question} {task_spec[answer]}")
    assert "--hidden-fields" in str(error.value)
    with pytest.raises(ValidationError, match="names 'target'"):
        PromptSettings(observation_template="target")  # a field name alone is a template too
    allowed = PromptSettings(observation_template="Go to {target}.", hidden_fields=["answer"])
    free_text = {"properties": {"reply": {"type": "string"}}, "required": ["reply"]}
    assert EpisodeProtocol(free_text, allowed).observation_text({"target": [4, 4], "answer": 1}) == "Go to [4, 4]."
    with pytest.raises(ValidationError, match="both set"):
        PromptSettings(observation_template="{a}", observation_field="{b}")
    assert PromptSettings(observation_field="{a}").template == "{a}"  # the old name still works
    assert EvalConfig(observation_field="question").template == "question"


def test_the_protocol_records_what_it_kept_from_the_model():
    protocol = EpisodeProtocol({"properties": {"reply": {"type": "string"}}, "required": ["reply"]})
    from openenv_prime.client.wire.session import StepResult

    text = protocol.text(StepResult({"question": "q?", "answer": "42", "metadata": {"solution": "42"}}, None, False))
    assert text == "q?" and protocol.hidden_seen == {"answer", "metadata.solution"}
