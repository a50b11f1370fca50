"""One budget for the whole prompt (hypothesis): the prompt never exceeds it; the system prompt, the task and the newest
turn are kept whole when they fit; older turns are left out oldest first and the note says how many; fitting a
fitted prompt plus new turns gives what fitting the whole conversation gives (verifiers' harness relies on it)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from openenv_prime.client.prompts.budget import fit_prompt, left_out_note, prompt_size
from openenv_prime.client.prompts.prompting import PromptSettings
from openenv_prime.client.prompts.render import EpisodeProtocol

NOTE = re.compile(r"\n\n\[(\d+) earlier turns? left out\]$")


def text(tag: str, length: int) -> str:
    return (f"<{tag}>" + "x" * length)[:max(length, 1)]


@st.composite
def conversations(draw, max_turns: int = 20):
    """[system?], the task, then (reply, observation) turns; each text starts with its own tag."""
    system = draw(st.none() | st.integers(0, 2000))
    messages = [] if system is None else [{"role": "system", "content": text("system", system)}]
    messages.append({"role": "user", "content": text("task", draw(st.integers(1, 4000)))})
    for turn in range(draw(st.integers(0, max_turns))):
        messages.append({"role": "assistant", "content": text(f"reply{turn}", draw(st.integers(0, 600)))})
        messages.append({"role": "user", "content": text(f"obs{turn}", draw(st.integers(1, 4000)))})
    return messages


def left_out(fitted: list[dict], original: list[dict]) -> int:
    found = NOTE.search(next(m for m in fitted if m["role"] == "user")["content"])
    return int(found.group(1)) if found else 0


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(1, 30_000))
def test_the_prompt_never_exceeds_the_budget(messages, budget):
    assert prompt_size(fit_prompt(messages, budget)) <= budget


@settings(max_examples=300, deadline=None)
@given(conversations(), st.integers(9_000, 30_000))
def test_the_system_prompt_the_task_and_the_newest_turn_are_kept_and_what_was_left_out_is_said(messages, budget):
    fitted = fit_prompt(messages, budget)
    system = [m for m in messages if m["role"] == "system"]
    first = len(system)
    if prompt_size(messages[:first + 1] + messages[-2:]) + len(left_out_note(99)) + 2 > budget:
        return  # the kept messages alone are over the budget: cut, tested above
    assert fitted[:first] == system
    assert fitted[-1] == messages[-1]  # the newest observation
    task = fitted[first]["content"]
    count = left_out(fitted, messages)
    assert task == messages[first]["content"] + (f"\n\n{left_out_note(count)}" if count else "")
    # the turns kept are the newest ones, whole, after exactly `count` left out
    assert fitted[first + 1:] == messages[first + 1 + 2 * count:]
    if prompt_size(messages) <= budget:
        assert fitted == messages


@settings(max_examples=200, deadline=None)
@given(conversations(max_turns=16), st.integers(9_000, 20_000), st.integers(1, 4))
def test_a_fitted_prompt_with_new_turns_fits_as_the_whole_conversation_does(messages, budget, new_turns):
    earlier = messages[:max(len(messages) - 2 * new_turns, 2 if messages[0]["role"] == "system" else 1)]
    fitted = fit_prompt(earlier, budget)
    if any("characters of this message left out" in m["content"] for m in fitted):
        return  # a message cut to fit (the last resort) is not the message the whole conversation holds
    assert fit_prompt(fitted + messages[len(earlier):], budget) == fit_prompt(messages, budget)


def test_a_coding_episode_of_repeated_tracebacks_stays_within_the_default_budget():
    """The issue's case: 16 turns of a 1,261-character traceback reached 19,245 characters."""
    settings_ = PromptSettings()
    protocol = EpisodeProtocol({"properties": {"code": {"type": "string"}}, "required": ["code"]}, settings=settings_)
    chat = [{"role": "user", "content": "Print the sum of 2 and 3."}]
    sizes, notes = [], []
    for turn in range(16):
        chat += [{"role": "assistant", "content": f"print(2 + 3{turn}"}, {"role": "user", "content": "T" * 1261}]
        prompt = protocol.prompt("Solve the task.", chat)
        sizes.append(prompt_size(prompt))
        notes.append(left_out(prompt, chat))
    assert prompt_size([{"content": "Solve the task."}] + chat) > settings_.prompt_budget  # it would have grown past it
    assert max(sizes) <= settings_.prompt_budget and notes[-1] > 0 and notes == sorted(notes)


def test_a_prompt_budget_that_cannot_hold_two_observations_is_refused():
    with pytest.raises(ValidationError, match="prompt_budget .* at least 8000"):
        PromptSettings(prompt_budget=5000)
    assert PromptSettings(prompt_budget=5000, observation_budget=2500).prompt_budget == 5000
