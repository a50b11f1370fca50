"""Tiers are exact curriculum points; splits use disjoint seed ranges; specs and ranges follow the index layout."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.envs.errors import TaskRequestError
from openenv_prime.envs.reasoning_gym_tiers.chain_sum import ChainSumTaskset
from openenv_prime.envs.reasoning_gym_tiers.overlap import overlap_report
from openenv_prime.envs.taskspecs import LIST_TASKS_CAP

TASKSET = ChainSumTaskset()


def tier_shapes(num_tiers: int, schedule: str = "lockstep") -> list[tuple[int, int]]:
    """(terms, digits) of every tier."""
    return [ChainSumTaskset(num_tiers, schedule).shape(t) for t in range(num_tiers)]


def _shape(question: str) -> tuple[int, set[int]]:
    expression = question.split(":", 1)[1].rstrip(" =")
    terms = re.findall(r"\d+", expression)
    return len(terms), {len(t) for t in terms}


def test_lockstep_tier_t_is_t_plus_2_terms_of_t_plus_1_digits():
    assert tier_shapes(5) == [(2, 1), (3, 2), (4, 3), (5, 4), (6, 5)]
    assert tier_shapes(10)[-1] == (11, 10)


def test_interleaved_schedule_runs_from_2x1_to_7x5_over_ten_tiers():
    assert tier_shapes(10, "interleaved") == [(2, 1), (3, 1), (3, 2), (4, 2), (4, 3), (5, 3), (5, 4), (6, 4), (6, 5), (7, 5)]


@pytest.mark.parametrize("split", ["train", "test"])
def test_generated_items_have_exactly_their_tiers_shape(split):
    per_tier = TASKSET.per_tier[split]
    for tier in range(TASKSET.num_tiers):
        terms, digits = TASKSET.shape(tier)
        for local in (0, 1, per_tier - 1):
            entry = TASKSET.entry(split, tier * per_tier + local)
            assert _shape(entry["question"]) == (terms, {digits})
            assert re.fullmatch(r"-?\d+", entry["answer"])


@pytest.mark.parametrize(
    "args, message",
    [((0,), "from 1 to 10"), ((11,), "from 1 to 10"), ((21, "interleaved"), "from 1 to 20"), ((5, "zigzag"), "lockstep, interleaved")],
)
def test_bad_tier_arguments_name_the_valid_range(args, message):
    with pytest.raises(ValueError, match=message):
        ChainSumTaskset(*args)


def test_seed_ranges_are_disjoint_with_gaps_across_splits_tiers_and_schedules():
    ranges = []
    for tasks in (ChainSumTaskset(10, "lockstep"), ChainSumTaskset(20, "interleaved")):
        for split, size in tasks.per_tier.items():
            ranges += [(tasks.seed_base(split, "chain_sum", t), size) for t in range(tasks.num_tiers)]
    ranges.sort()
    for (start, size), (next_start, next_size) in zip(ranges, ranges[1:]):
        # reasoning-gym seeds item i with seed + i: a gap wider than both ranges keeps items apart
        assert next_start - (start + size) > max(size, next_size)


def test_split_sizes_and_list_tasks_cap():
    assert TASKSET.num_tasks("train") == 50_000 and TASKSET.num_tasks("test") == 1_000
    assert len(TASKSET.list_tasks("train")) == LIST_TASKS_CAP < TASKSET.num_tasks("train")
    assert [s["name"] for s in TASKSET.list_splits()] == ["train", "test"]


def test_spec_fields_and_durable_id():
    spec = TASKSET.get_task("test", 777)
    assert spec == {
        "id": "chain_sum/test/t3/177", "split": "test", "index": 777, "tier": 3, "local_index": 177,
        "num_terms": 5, "num_digits": 4, "seed": 1_030_000_177,
    }
    # the same id names the same problem on any fresh instance
    assert ChainSumTaskset().entry("test", 777) == TASKSET.entry("test", 777)
    assert ChainSumTaskset(10, "interleaved").get_task("test", 777)["id"].startswith("chain_sum_interleaved/")


@settings(max_examples=200, deadline=None)
@given(split=st.sampled_from(["train", "test"]), data=st.data())
def test_index_layout_round_trips(split, data):
    index = data.draw(st.integers(0, TASKSET.num_tasks(split) - 1))
    spec = TASKSET.get_task(split, index)
    per_tier = TASKSET.per_tier[split]
    assert spec["tier"] * per_tier + spec["local_index"] == index
    assert spec["id"] == f"chain_sum/{split}/t{spec['tier']}/{spec['local_index']}"
    assert (spec["num_terms"], spec["num_digits"]) == (spec["tier"] + 2, spec["tier"] + 1)


@settings(max_examples=100, deadline=None)
@given(start=st.none() | st.integers(-1_200, 1_200), stop=st.none() | st.integers(-1_200, 1_200))
def test_task_range_follows_python_slices(start, stop):
    got = [s["index"] for s in TASKSET.get_task_range("test", start, stop)]
    assert got == list(range(1_000))[start:stop]


@pytest.mark.parametrize("index", [-1, 1_000, 10**9])
def test_bad_index_raises_index_error(index):
    with pytest.raises(IndexError, match="out of range"):
        TASKSET.get_task("test", index)


@pytest.mark.parametrize("call", [lambda: TASKSET.get_task("test", "5"), lambda: TASKSET.get_task("test", True)])
def test_a_non_integer_index_is_a_request_error_naming_the_field(call):
    with pytest.raises(TaskRequestError, match="task index must be an integer") as caught:
        call()
    assert caught.value.field == "index"


def test_unknown_split_names_the_known_splits():
    for call in (lambda: TASKSET.num_tasks("dev"), lambda: TASKSET.get_task("dev", 0), lambda: TASKSET.list_tasks("dev")):
        with pytest.raises(ValueError, match="unknown split 'dev'; known splits: train, test"):
            call()


def test_pick_index_is_deterministic_and_stays_in_its_tier():
    assert TASKSET.pick_index(7, "test") == TASKSET.pick_index(7, "test")
    for tier in range(5):
        picks = {TASKSET.pick_index(seed, "test", tier) for seed in range(50)}
        assert {TASKSET.get_task("test", i)["tier"] for i in picks} == {tier}
        assert len(picks) > 1
    with pytest.raises(ValueError, match="tier must be an integer from 0 to 4"):
        TASKSET.pick_index(0, "test", 5)
    with pytest.raises(TaskRequestError, match="seed must be an integer, got 'abc'"):
        TASKSET.pick_index("abc", "test")


def test_overlap_report_tier0_repeats_and_other_tiers_are_disjoint():
    rows = overlap_report(TASKSET)
    assert [r.tier for r in rows] == [0, 1, 2, 3, 4]
    # tier 0 (two 1-digit terms) has only ~200 distinct problems: every test item is also in train
    assert rows[0].test_items_in_train == 200 and rows[0].distinct_train_questions <= 200
    assert all(r.test_items_in_train == 0 for r in rows[1:])
