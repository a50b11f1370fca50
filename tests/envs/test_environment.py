"""The environment object directly: reset by index or seed/tier, one scored step, clear errors, unchanged state on rejection."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.envs.reasoning_gym_tiers.chain_sum import ChainSumTaskset
from openenv_prime.envs.reasoning_gym_tiers.environment import ChainSumAction, ChainSumEnvironment

TASKSET = ChainSumTaskset()


def test_class_allows_concurrent_sessions():
    assert ChainSumEnvironment.SUPPORTS_CONCURRENT_SESSIONS is True


def test_reset_by_split_and_index_loads_that_task():
    env = ChainSumEnvironment()
    obs = env.reset(split="test", index=777, episode_id="ep-1")
    entry = TASKSET.entry("test", 777)
    assert obs.question == entry["question"] and obs.task == TASKSET.get_task("test", 777)
    assert obs.done is False and obs.reward is None and obs.correct_answer is None
    state = env.state
    assert (state.episode_id, state.split, state.index, state.tier, state.task_id, state.step_count) == (
        "ep-1", "test", 777, 3, "chain_sum/test/t3/177", 0,
    )


def test_reset_by_seed_is_reproducible_and_tier_restricts_it():
    first = ChainSumEnvironment().reset(seed=11, split="test")
    again = ChainSumEnvironment().reset(seed=11, split="test")
    assert first.task == again.task
    for tier in range(5):
        obs = ChainSumEnvironment().reset(seed=11, split="test", tier=tier)
        assert obs.task["tier"] == tier
    assert ChainSumEnvironment().reset(seed=3).task["split"] == "train"


@pytest.mark.parametrize("reply, reward", [("4711", 1.0), ("The answer is 4711", 1.0), ("47110", 0.0), ("4712", 0.0)])
def test_step_scores_and_ends_the_episode(reply, reward):
    env = ChainSumEnvironment()
    env.reset(split="test", index=777)
    obs = env.step(ChainSumAction(answer=reply))
    assert obs.reward == reward and obs.correct is (reward == 1.0) and obs.done is True
    assert obs.correct_answer == "4711" and 0.0 <= obs.score <= 1.0
    assert env.state.step_count == 1 and env.state.done is True


def test_step_naming_a_task_works_on_a_fresh_instance():
    # stateless HTTP /step forwards top-level split and index
    obs = ChainSumEnvironment().step(ChainSumAction(answer="4711"), split="test", index=777)
    assert obs.reward == 1.0 and obs.task["id"] == "chain_sum/test/t3/177"


def test_step_before_reset_and_after_done_are_rejected():
    env = ChainSumEnvironment()
    with pytest.raises(RuntimeError, match="no task loaded"):
        env.step(ChainSumAction(answer="1"))
    env.reset(split="test", index=0)
    env.step(ChainSumAction(answer="1"))
    with pytest.raises(RuntimeError, match="already finished"):
        env.step(ChainSumAction(answer="1"))


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"split": "test", "index": 1000}, IndexError, "out of range"),
        ({"split": "dev", "index": 0}, ValueError, "known splits: train, test"),
        ({"split": "test", "idx": 3}, ValueError, r"unknown reset argument\(s\) \['idx'\]"),
        ({"split": "test", "seed": 1, "tier": 9}, ValueError, "tier must be an integer from 0 to 4"),
        ({"split": "test", "index": 3, "tier": 0}, ValueError, "either index or tier"),
    ],
)
def test_rejected_reset_names_the_problem_and_keeps_the_episode(kwargs, error, message):
    env = ChainSumEnvironment()
    env.reset(split="test", index=5, episode_id="keep")
    before = env.state.model_dump()
    with pytest.raises(error, match=message):
        env.reset(**kwargs)
    assert env.state.model_dump() == before
    assert env.step(ChainSumAction(answer=TASKSET.entry("test", 5)["answer"])).reward == 1.0


def test_task_api_methods_do_not_touch_the_episode():
    env = ChainSumEnvironment()
    env.reset(split="test", index=42, episode_id="e")
    before = env.state.model_dump()
    assert env.num_tasks("train") == 50_000 and len(env.list_tasks("train")) == 1_000
    assert env.get_task("test", 42)["index"] == 42 and len(env.get_task_range("test", 0, 10)) == 10
    assert [s["name"] for s in env.list_splits()] == ["train", "test"]
    assert env.state.model_dump() == before


@settings(max_examples=60, deadline=None)
@given(split=st.sampled_from(["train", "test"]), data=st.data(), delta=st.integers(-50, 50).filter(bool))
def test_any_task_rewards_its_answer_and_nothing_else(split, data, delta):
    index = data.draw(st.integers(0, TASKSET.num_tasks(split) - 1))
    env = ChainSumEnvironment()
    answer = TASKSET.entry(split, index)["answer"]
    assert env.reset(split=split, index=index).task["index"] == index
    assert env.step(ChainSumAction(answer=f"So the result is {answer}.")).reward == 1.0
    env.reset(split=split, index=index)
    assert env.step(ChainSumAction(answer=str(int(answer) + delta))).reward == 0.0
