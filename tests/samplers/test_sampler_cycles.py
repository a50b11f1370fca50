"""Per-key cycles from a seed and a position: uniform orders, each task once per cycle, exact replay."""

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.samplers import Task
from openenv_prime.samplers.cycles import KeyCycles
from openenv_prime.samplers.pool import TaskPool
from sampler_helpers import chi_square, chi_square_critical


@pytest.mark.parametrize("seed", [0, 1])
def test_cycle_orders_are_uniform_over_permutations(seed):
    pool = TaskPool([Task("t", i, "k") for i in range(4)])
    cycles, rng = KeyCycles(pool), random.Random(seed)
    counts = dict.fromkeys(itertools.permutations(range(4)), 0)
    for _ in range(12_000):
        counts[tuple(cycles.next(0, rng) for _ in range(4))] += 1
    expected = [12_000 / 24] * 24
    assert chi_square(list(counts.values()), expected) < chi_square_critical(23)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=4), draws=st.lists(st.integers(0, 3), max_size=120), seed=st.integers(0, 2**31))
def test_a_cycle_rebuilt_from_its_seed_and_position_continues_identically(sizes, draws, seed):
    pool = TaskPool([Task("t", i, f"k{k}") for i, k in enumerate(k for k, n in enumerate(sizes) for _ in range(n))])
    live, rng = KeyCycles(pool), random.Random(seed)
    for d in draws:
        live.next(d % len(sizes), rng)
    rebuilt, rng_copy = KeyCycles.from_json(live.to_json(), pool), random.Random()
    rng_copy.setstate(rng.getstate())
    for slot in range(len(sizes)):
        for _ in range(2 * sizes[slot] + 1):
            assert rebuilt.next(slot, rng_copy) == live.next(slot, rng)
    assert rebuilt.to_json() == live.to_json()
