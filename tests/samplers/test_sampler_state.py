"""Checkpoints continue exactly; bad input raises a clear error and changes nothing."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from openenv_prime.samplers import CurriculumSampler, SequentialSampler, Task, UniformSampler
from sampler_helpers import KINDS, binary_group_st, build, frozen, graded_group_st, make_pool

FAST = settings(max_examples=40, deadline=None)


class CheckpointMachine(RuleBasedStateMachine):
    """Two copies of one sampler: ``live`` never stops; ``resumed`` is saved to JSON and reloaded into a
    fresh object now and then. Both get the same calls and must give the same draws and state."""

    @initialize(kind=st.sampled_from(KINDS), sizes=st.lists(st.integers(1, 9), min_size=1, max_size=5), seed=st.integers(0, 2**31),
                with_costs=st.booleans())
    def setup(self, kind, sizes, seed, with_costs):
        self.kind, self.seed, self.with_costs = kind, seed, with_costs  # costs for every group or for none
        self.tasks = make_pool(sizes)
        self.keys = sorted({t.key for t in self.tasks})
        self.live = build(kind, self.tasks, seed)
        self.resumed = build(kind, self.tasks, seed)

    @rule(n=st.integers(0, 12))
    def sample(self, n):
        assert self.live.sample(n) == self.resumed.sample(n)

    @rule(k=st.integers(0, 40), rewards=st.one_of(binary_group_st, graded_group_st), by_task=st.booleans())
    def update(self, k, rewards, by_task):
        costs = [1.5 * (i + 1) for i in range(len(rewards))] if self.with_costs else None
        # By key, or by the task itself (the curriculum then keeps evidence per task: taskevidence.py).
        key = self.tasks[k % len(self.tasks)] if by_task else self.keys[k % len(self.keys)]
        self.live.update(key, rewards, costs)
        self.resumed.update(key, rewards, costs)

    @rule(other_seed=st.integers(0, 2**31))
    def checkpoint(self, other_seed):
        text = json.dumps(self.resumed.state_dict(), allow_nan=False)
        # A fresh object, even one built with another seed: the state carries the RNG.
        fresh = build(self.kind, self.tasks, other_seed if self.kind != "sequential" else 0)
        fresh.load_state_dict(json.loads(text))
        self.resumed = fresh

    @invariant()
    def same_statistics(self):
        if hasattr(self, "live"):
            assert self.live.metrics() == self.resumed.metrics()
            live, resumed = self.live.state_dict(), self.resumed.state_dict()
            live.pop("config"), resumed.pop("config")  # the seed it was built with may differ
            assert live == resumed


CheckpointMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=25, deadline=None)
test_checkpoint_continues_the_uninterrupted_run = CheckpointMachine.TestCase


def _bad_calls(sampler, key):
    """Each entry: a call that must raise, with the text its message must contain."""
    return [
        (lambda: sampler.update("no-such-key", [1.0]), KeyError, "unknown key 'no-such-key'"),
        (lambda: sampler.update(3, [1.0]), KeyError, "keys are strings"),
        (lambda: sampler.update(key, []), ValueError, "rewards is empty"),
        (lambda: sampler.update(key, [0.0, math.nan]), ValueError, r"rewards\[1\] is nan"),
        (lambda: sampler.update(key, [math.inf]), ValueError, "finite"),
        (lambda: sampler.update(key, [1.0, 0.0], [1.0]), ValueError, r"len\(costs\) = 1 but len\(rewards\) = 2"),
        (lambda: sampler.update(key, [1.0], [math.nan]), ValueError, r"costs\[0\] is nan"),
        (lambda: sampler.update(key, [1.0], [-math.inf]), ValueError, "finite"),
        (lambda: sampler.update(key, [1.0], [-2.0]), ValueError, ">= 0"),
        (lambda: sampler.update(key, ["1.0"]), TypeError, "expected a number"),
        (lambda: sampler.update(key, "10"), TypeError, "sequence of numbers"),
        (lambda: sampler.sample(-1), ValueError, "n >= 0"),
        (lambda: sampler.sample(2.5), ValueError, "n >= 0"),
        (lambda: sampler.load_state_dict({"sampler": "Nope"}), ValueError, "saved by 'Nope'"),
        (lambda: sampler.load_state_dict([]), TypeError, "needs the dict"),
    ]


@FAST
@given(kind=st.sampled_from(KINDS), seed=st.integers(0, 2**31), warmup=st.lists(binary_group_st, max_size=5), which=st.data())
def test_bad_calls_raise_and_leave_state_unchanged(kind, seed, warmup, which):
    sampler = build(kind, make_pool([2, 3]), seed)
    for rewards in warmup:
        sampler.sample(1)
        sampler.update("k1", rewards)
    before = frozen(sampler)
    call, error, message = which.draw(st.sampled_from(_bad_calls(sampler, "k0")))
    with pytest.raises(error, match=message):
        call()
    assert frozen(sampler) == before


def _other_states(kind, tasks):
    """States this sampler must refuse, with the text the error must contain."""
    sampler = build(kind, tasks)
    good = sampler.state_dict()
    other_class = SequentialSampler(tasks) if kind != "sequential" else UniformSampler(tasks)
    other_pool = build(kind, tasks + [Task("train", 999, "k0")])
    reordered = build(kind, list(reversed(tasks)))
    broken = json.loads(json.dumps(good))
    broken["stats"]["episodes"] = [1]  # wrong length
    negative = json.loads(json.dumps(good))
    negative["stats"]["draws"][0] = -3
    out = [
        (other_class.state_dict(), "saved by"),
        (other_pool.state_dict(), "different task pool"),
        (reordered.state_dict(), "different task pool"),
        (dict(good, version=99), "version 99"),
        (dict(good, rng="nope"), "rng"),
        (broken, "stats.episodes"),
        (negative, "stats.draws"),
    ]
    if kind.startswith("curriculum"):
        other_gamma = CurriculumSampler(tasks, group_size=4, gamma=0.5, signal=sampler.signal, tolerance=sampler.tolerance)
        out.append((other_gamma.state_dict(), "config"))
        bad_cycles = json.loads(json.dumps(good))
        bad_cycles["cycles"] = [[0, 5, 999]]
        out.append((bad_cycles, r"cycles\[0\]\[2\] \(position\)"))
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_foreign_or_corrupt_states_are_refused_and_change_nothing(kind):
    tasks = make_pool([2, 3])
    for state, message in _other_states(kind, tasks):
        sampler = build(kind, tasks, seed=5)
        sampler.sample(3)
        sampler.update("k1", [0.0, 1.0, 1.0], [2.0, 2.0, 2.0])
        before = frozen(sampler)
        with pytest.raises((ValueError, TypeError), match=message):
            sampler.load_state_dict(state)
        assert frozen(sampler) == before


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: SequentialSampler([]), "task pool is empty"),
        (lambda: UniformSampler([Task("a", 1, "x"), Task("a", 1, "y")]), r"duplicate task \(split='a', index=1\)"),
        (lambda: UniformSampler([("a", 1, "x")]), "not a Task"),
        (lambda: UniformSampler(make_pool([1]), over="families"), "over must be one of"),
        (lambda: CurriculumSampler(make_pool([1]), gamma=0.0), r"gamma must be in \(0, 1\]"),
        (lambda: CurriculumSampler(make_pool([1]), gamma=1.5), r"gamma must be in \(0, 1\]"),
        (lambda: CurriculumSampler(make_pool([1]), gamma=math.nan), r"gamma must be in \(0, 1\]"),
        (lambda: CurriculumSampler(make_pool([1]), epsilon=0.0), "epsilon must be"),
        (lambda: CurriculumSampler(make_pool([1]), epsilon=math.inf), "epsilon must be"),
        (lambda: CurriculumSampler(make_pool([1]), group_size=1), "group_size must be an int >= 2"),
        (lambda: CurriculumSampler(make_pool([1]), signal="entropy"), "signal must be one of"),
        (lambda: CurriculumSampler(make_pool([1]), tolerance=-1), "tolerance must be"),
        (lambda: CurriculumSampler(make_pool([1]), success_threshold=math.nan), "success_threshold"),
    ],
)
def test_bad_construction_names_the_problem(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


def test_gamma_one_is_allowed_and_means_no_decay():
    sampler = CurriculumSampler(make_pool([1]), gamma=1.0, group_size=4)
    for _ in range(3):
        sampler.update("k0", [1.0, 0.0, 0.0, 0.0])
    assert sampler.success_rate("k0") == pytest.approx((1 + 3) / (2 + 12))


def test_state_is_plain_json_with_version_and_rng():
    sampler = CurriculumSampler(make_pool([2, 2]), seed=3)
    state = sampler.state_dict()
    assert json.loads(json.dumps(state, allow_nan=False)) == state
    assert state["version"] == 2 and state["sampler"] == "CurriculumSampler"
    assert set(state["rng"]) == {"mt", "index", "gauss"} and len(state["rng"]["mt"]) == 3328  # 624 words in base64
