"""A state is loaded whole or rejected with a ValueError naming the field, never half: properties and the bugs of issue 10."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import CurriculumSampler, SequentialSampler, UniformSampler, upgrade_state_dict
from sampler_helpers import KINDS, binary_group_st, build, frozen, make_pool

TASKS = make_pool([2, 3, 1])
KEYS = ["k0", "k1", "k2"]
SOME = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_leaf_st = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
)
json_st = st.recursive(
    json_leaf_st,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)),
    max_leaves=12,
)


def _trained(kind, seed, groups):
    """Sampled and updated, by key and by task (so that per-task evidence is in the state too)."""
    sampler = build(kind, TASKS, seed)
    for i, rewards in enumerate(groups):
        sampler.sample(1 + i % 3)
        sampler.update(TASKS[i % len(TASKS)] if i % 2 else KEYS[i % 3], rewards, [1.0] * len(rewards))
    return sampler


def _snapshot(sampler):
    """Everything observable: the state, the metrics, and (curriculum) the draw probabilities from the caches."""
    probabilities = sampler.probabilities() if hasattr(sampler, "probabilities") else None
    return frozen(sampler), json.dumps(sampler.metrics(), sort_keys=True), probabilities


def _paths(value, prefix=()):
    """Every path to a value inside nested dicts and lists."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


def _replace(state, path, new):
    """A copy of ``state`` with the value at ``path`` replaced (``new is _DELETE``: removed)."""
    state = json.loads(json.dumps(state))
    holder = state
    for step in path[:-1]:
        holder = holder[step]
    if new is _DELETE:
        del holder[path[-1]]
    else:
        holder[path[-1]] = new
    return state


_DELETE = object()


def _with_added_columns(state, keys):
    """``state`` as a sampler reads it: a curriculum column added since states were first saved, when absent, at 0
    for every key (curriculum._ADDED_EVIDENCE)."""
    from openenv_prime.samplers.curriculum import _ADDED_EVIDENCE

    learned = state.get("curriculum")
    if not isinstance(learned, dict) or all(name in learned for name in _ADDED_EVIDENCE):
        return state
    return {**state, "curriculum": {**learned, **{name: [0.0] * keys for name in _ADDED_EVIDENCE if name not in learned}}}


def _check_whole_or_nothing(sampler, state):
    before = _snapshot(sampler)
    try:
        sampler.load_state_dict(state)
    except ValueError:
        assert _snapshot(sampler) == before
        return False
    after = sampler.state_dict()
    state = _with_added_columns(state, len(sampler.pool.keys))
    for name, value in after.items():  # everything the sampler keeps came from the state
        if name != "config":
            assert value == state[name], name
    json.dumps(after, allow_nan=False)
    sampler.metrics()  # usable after loading
    return True


@SOME
@given(kind=st.sampled_from(KINDS), seed=st.integers(0, 2**31), groups=st.lists(binary_group_st, max_size=8), data=st.data())
def test_a_mutated_valid_state_loads_whole_or_not_at_all(kind, seed, groups, data):
    source = _trained(kind, seed, groups).state_dict()
    paths = [p for p in _paths(source) if p and p[0] not in ("sampler", "config")]
    path = data.draw(st.sampled_from(paths))
    new = data.draw(st.one_of(json_st, st.just(_DELETE)) if isinstance(path[-1], str) else json_st)
    state = _replace(source, path, new)
    target = _trained(kind, seed + 1, groups[:1])  # a sampler with another history
    if _check_whole_or_nothing(target, state):
        target.sample(5)
        target.update(KEYS[0], [1.0, 0.0])


@SOME
@given(kind=st.sampled_from(KINDS), body=st.dictionaries(st.sampled_from(["rng", "stats", "curriculum", "cycles", "cursor", "epoch", "lineage", "task_evidence"]), json_st))
def test_an_arbitrary_json_body_in_a_valid_envelope_is_rejected_with_value_error(kind, body):
    target = _trained(kind, 3, [[1.0, 0.0], [0.0]])
    envelope = {name: target.state_dict()[name] for name in ("version", "sampler", "pool", "config")}
    _check_whole_or_nothing(target, {**envelope, **body})


@SOME
@given(kind=st.sampled_from(KINDS), state=st.dictionaries(st.text(max_size=8), json_st))
def test_arbitrary_json_dicts_are_rejected_with_value_error(kind, state):
    target = _trained(kind, 3, [[1.0, 0.0]])
    assert not _check_whole_or_nothing(target, state)


@SOME
@given(kind=st.sampled_from(KINDS), seed=st.integers(0, 2**31), groups=st.lists(binary_group_st, max_size=8))
def test_a_valid_state_loads_whole_into_a_sampler_with_another_history(kind, seed, groups):
    source = _trained(kind, seed, groups)
    target = _trained(kind, seed + 1, groups[::-1])
    assert _check_whole_or_nothing(target, json.loads(json.dumps(source.state_dict())))
    assert target.sample(7) == source.sample(7)
    for _ in range(3):  # every mutation that loads gives a usable sampler
        target.update(KEYS[0], [1.0, 0.0])
        target.sample(3)


# -- the bugs listed in issue 10, each rejected with the field named and nothing changed ----------------------------


def _curriculum_state(**edits):
    sampler = _trained("curriculum", 1, [[1.0, 0.0, 1.0, 1.0]] * 4)
    state = json.loads(json.dumps(sampler.state_dict()))
    for dotted, value in edits.items():
        section, name, slot = dotted.split(".")
        state[section][name][int(slot)] = value
    return state


@pytest.mark.parametrize(
    "edits, message",
    [
        # s = 1 + (-1), f = 1 + (-1): p divides by zero while loading (was: ZeroDivisionError after half the fields were set)
        ({"curriculum.successes.2": -1.0, "curriculum.failures.2": -1.0, "curriculum.updates.2": 0}, r"curriculum\.successes"),
        ({"curriculum.failures.0": -0.5}, r"curriculum\.failures holds -0\.5"),  # was: loaded
        ({"stats.draws.1": math.inf}, r"stats\.draws holds inf"),  # was: OverflowError
        ({"stats.groups.1": math.nan}, r"stats\.groups holds nan"),  # was: ValueError not naming the field
        ({"curriculum.updates.0": 10**400}, r"curriculum\.updates holds"),  # was: OverflowError in gamma ** n
        ({"curriculum.predicted_sum.0": -math.inf}, r"curriculum\.predicted_sum"),
        ({"stats.cost.0": "12"}, r"stats\.cost holds '12'"),
        ({"stats.groups_with_signal.0": 10**6}, r"groups_with_signal\[0\] = 1000000 exceeds"),
        # gamma ** 10**6 underflows to 0: a key updated that often must have evidence, or p is 0/0 (was: loaded, then
        # ZeroDivisionError in metrics())
        (
            {"curriculum.updates.0": 10**6, "curriculum.successes.0": 0.0, "curriculum.failures.0": 0.0},
            r"curriculum\.successes\[0\] and curriculum\.failures\[0\] are both 0 after 1000000 updates",
        ),
    ],
)
def test_each_bad_field_is_a_value_error_naming_it_and_changes_nothing(edits, message):
    state = _curriculum_state(**edits)
    target = _trained("curriculum", 7, [[0.0, 0.0, 1.0, 0.0]])
    before = _snapshot(target)
    with pytest.raises(ValueError, match=message):
        target.load_state_dict(state)
    assert _snapshot(target) == before


@pytest.mark.parametrize(
    "rng, message",
    [
        ({"mt": "AAAA", "index": 0, "gauss": None}, r"rng\.mt must be the base64 text of 624"),
        (None, r"rng must be a dict"),
        ("nope", r"rng must be a dict"),
        ({"index": 700}, r"rng must be a dict with exactly mt, index and gauss, got \['index'\]"),
        ({"mt": "", "index": 0, "gauss": None}, r"rng\.mt"),
        ("index", r"rng must be a dict"),
    ],
)
def test_a_bad_rng_is_a_value_error_naming_it(rng, message):
    target = _trained("uniform-tasks", 7, [])
    state = dict(target.state_dict(), rng=rng)
    before = _snapshot(target)
    with pytest.raises(ValueError, match=message):
        target.load_state_dict(state)
    assert _snapshot(target) == before


def test_rng_index_and_gauss_are_checked():
    target = UniformSampler(TASKS)
    good = target.state_dict()
    for rng, message in (
        (dict(good["rng"], index=625), r"rng\.index holds 625"),
        (dict(good["rng"], index=True), r"rng\.index holds True"),
        (dict(good["rng"], gauss="x"), r"rng\.gauss holds 'x'"),  # was: loaded, then gauss() failed later
        (dict(good["rng"], gauss=math.nan), r"rng\.gauss holds nan"),
    ):
        with pytest.raises(ValueError, match=message):
            target.load_state_dict(dict(good, rng=rng))


def test_sequential_cursor_and_epoch_are_checked():
    sampler = SequentialSampler(TASKS)
    good = sampler.state_dict()
    for edit, message in (
        ({"cursor": len(TASKS)}, r"cursor holds 6, outside \[0, 5\]"),
        ({"epoch": math.inf}, r"epoch holds inf"),
        ({"epoch": -1}, r"epoch holds -1"),
        ({"cursor": 1.5}, r"cursor holds 1.5"),
    ):
        with pytest.raises(ValueError, match=message):
            sampler.load_state_dict(dict(good, **edit))


def test_a_version_1_state_is_refused_with_how_to_convert_it_and_upgrade_keeps_the_statistics():
    sampler = _trained("curriculum", 4, [[1.0, 0.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0]])
    v2 = sampler.state_dict()
    import random

    rng = random.Random(9)
    version, internal, gauss = rng.getstate()
    v1 = dict(v2, version=1, rng=[version, list(internal), gauss], cycles={"orders": [[0, 3], [1, 4, 5], [2]], "positions": [1, 0, 0]})
    del v1["lineage"]  # version 1 states never had one
    with pytest.raises(ValueError, match=r"state version 1 is from an older openenv-prime .*upgrade_state_dict"):
        CurriculumSampler(TASKS, group_size=4).load_state_dict(v1)
    resumed = CurriculumSampler(TASKS, group_size=4)
    resumed.load_state_dict(upgrade_state_dict(v1))
    assert resumed.metrics() == sampler.metrics()
    assert resumed._rng.getstate() == rng.getstate()
    with pytest.raises(ValueError, match="converts version 1 states; this one is 2"):
        upgrade_state_dict(v2)
