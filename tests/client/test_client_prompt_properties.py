"""Invariants of what the model is shown, over generated observations (hypothesis): no hidden value ever appears,
whatever shape holds it and however the text is made; the default rendering stays within its budget and names every
field it left out."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openenv_prime.client import observation_to_text
from openenv_prime.client.prompts.hidden import DEFAULT_HIDDEN_FIELDS, HiddenNames, normalized, scrub
from openenv_prime.client.prompts.observations import BOOKKEEPING_OBSERVATION_FIELDS, TEXT_FIELDS

GOLD = "GOLD-7f3a9"  # upper case and a dash: no generated value can spell it by chance
SAFE = "abcdefghijklmnopqrstuvwxyz 0123456789.,:"
HIDDEN = HiddenNames()
names = st.text(alphabet="abcdefghijklmnop_", min_size=1, max_size=10).filter(
    lambda name: name not in HIDDEN and normalized(name) not in BOOKKEEPING_OBSERVATION_FIELDS
    and not normalized(name).endswith("metadata")
)
scalars = st.none() | st.booleans() | st.integers(-99, 99) | st.floats(-10, 10, allow_nan=False) | st.text(SAFE, max_size=400)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=6) | st.dictionaries(names, inner, max_size=4),
                      max_leaves=30)
hidden_names = st.sampled_from(DEFAULT_HIDDEN_FIELDS).flatmap(
    lambda name: st.sampled_from([name, name.upper(), "".join(p.title() if i else p for i, p in enumerate(name.split("_")))])
)


@st.composite
def gold_holders(draw):
    """A value that holds GOLD under a hidden name: directly, nested, in a list, or inside a JSON string."""
    held = {draw(hidden_names): draw(st.sampled_from([GOLD, [GOLD], {"text": GOLD}, f"the {GOLD} here"]))}
    for _ in range(draw(st.integers(0, 3))):
        wrap = draw(st.sampled_from(["dict", "list", "json"]))
        if wrap == "dict":
            held = {draw(names): held, **draw(st.dictionaries(names, scalars, max_size=2))}
        elif wrap == "list":
            held = [draw(scalars), held]
        else:
            held = json.dumps(held)
    return held


@st.composite
def gold_observations(draw):
    observation = draw(st.dictionaries(names, values, max_size=6))
    for _ in range(draw(st.integers(1, 3))):
        holder = draw(gold_holders())
        where = draw(st.sampled_from(["top", "field", "metadata"]))
        if where == "top" and isinstance(holder, dict):
            observation.update(holder)
        elif where == "metadata":
            observation.setdefault("metadata", {})[draw(names)] = holder
        else:
            observation[draw(names)] = holder
    return observation


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(observation=gold_observations(), budget=st.integers(200, 6000), only_metadata=st.booleans())
def test_no_hidden_value_ever_reaches_the_text(observation, budget, only_metadata):
    if only_metadata:  # an imported environment's shape: everything in metadata
        observation = {"metadata": observation}
    text = observation_to_text(observation, budget=budget, metadata=observation.get("metadata"))
    assert GOLD not in text
    assert GOLD not in json.dumps(scrub(observation).value)


@settings(max_examples=100, deadline=None)
@given(observation=gold_observations(), spec=st.sampled_from(["", ":json", ":text"]))
def test_no_template_shows_a_hidden_value(observation, spec):
    for name in [n for n in observation if n not in HIDDEN]:
        text = observation_to_text(observation, f"{{{name}{spec}}}")
        assert GOLD not in text
    for name in [n for n in observation if n in HIDDEN]:
        with pytest.raises(ValueError, match="may hold the answer"):
            observation_to_text(observation, f"{{{name}}}")


shown_values = st.text(SAFE, min_size=1, max_size=900) | st.lists(st.integers(0, 9), min_size=1, max_size=300) \
    | st.dictionaries(names, st.text(SAFE, max_size=40), min_size=1, max_size=5) | st.integers()


@settings(max_examples=150, deadline=None)
@given(observation=st.dictionaries(names, shown_values, min_size=1, max_size=24), budget=st.integers(200, 3000),
       text_field=st.sampled_from([None, *TEXT_FIELDS]), text=st.text(SAFE, min_size=1, max_size=5000))
def test_the_text_is_within_the_budget_and_names_what_it_left_out(observation, budget, text_field, text):
    if text_field is not None:
        observation = {text_field: text, **{k: v for k, v in observation.items() if k != text_field}}
    rendered = observation_to_text(observation, budget=budget)
    assert len(rendered) <= budget
    if len(observation) > 1:  # every field is shown under its name, is the text shown first, or is named as left out
        for name in observation:
            if name != text_field:
                named = f"\n{name}" in f"\n{rendered}" or f" {name}," in rendered or f" {name}]" in rendered
                assert named or " more]" in rendered or rendered.endswith(" characters]"), name  # (too many to name)
    if text_field is not None and len(text) > budget:
        assert "characters of" in rendered and "left out" in rendered
