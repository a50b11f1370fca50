"""Task choice for evals: a pure function of the split's tasks, the seed and per_family."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.evaluation.selection import choose_tasks, family_sort_key
from openenv_prime.samplers.task import Task

pools = st.dictionaries(
    keys=st.sampled_from(["0", "1", "2", "10", "easy", "hard"]),
    values=st.integers(min_value=0, max_value=30),
    min_size=1,
)


def _tasks(sizes: dict[str, int]) -> list[Task]:
    tasks, index = [], 0
    for family, size in sizes.items():
        for _ in range(size):
            tasks.append(Task("test", index, family))
            index += 1
    return tasks


@settings(max_examples=150, deadline=None)
@given(sizes=pools, per_family=st.integers(1, 12), seed=st.integers(0, 2**32), shuffle_seed=st.integers(0, 99))
def test_choice_is_a_sorted_subset_of_the_right_size_and_ignores_input_order(sizes, per_family, seed, shuffle_seed):
    tasks = _tasks(sizes)
    chosen = choose_tasks(tasks, per_family, seed)
    shuffled = list(tasks)
    random.Random(shuffle_seed).shuffle(shuffled)
    assert choose_tasks(shuffled, per_family, seed) == chosen
    assert set(chosen) <= set(tasks) and len(set(chosen)) == len(chosen)
    for family, size in sizes.items():
        assert sum(t.key == family for t in chosen) == min(size, per_family)
    order = [(family_sort_key(t.key), t.index) for t in chosen]
    assert order == sorted(order)


def test_seeds_choose_different_tasks_and_numeric_families_sort_numerically():
    tasks = _tasks({"10": 200, "2": 200})
    a, b = choose_tasks(tasks, 5, seed=0), choose_tasks(tasks, 5, seed=1)
    assert a != b
    assert [t.key for t in a] == ["2"] * 5 + ["10"] * 5


def test_family_filter_keeps_only_those_and_names_missing_ones():
    tasks = _tasks({"0": 10, "1": 10, "2": 10})
    assert {t.key for t in choose_tasks(tasks, 3, 0, families=["2", "0"])} == {"0", "2"}
    with pytest.raises(ValueError, match=r"\['7'\].*'0', '1', '2'"):
        choose_tasks(tasks, 3, 0, families=["0", "7"])
