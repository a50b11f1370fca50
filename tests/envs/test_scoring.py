"""Reward is 1.0 only when the reply's final number is exactly the answer; the raw score keeps reasoning-gym's partial credit."""

from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openenv_prime.envs.reasoning_gym_tiers.scoring import extract_final_number, score_final_number

score_reply = partial(score_final_number, "chain_sum")


@pytest.mark.parametrize(
    "reply, oracle, reward",
    [
        ("-24", "-24", 1.0),
        ("-240", "-24", 0.0),  # reasoning-gym alone gives 0.75
        ("1-24", "-24", 0.0),
        ("--24", "-24", 0.0),
        ("<answer>-24</answer>", "-24", 1.0),
        ("The answer is 169", "169", 1.0),  # reasoning-gym alone gives 0.176
        ("169 + 1 = 170", "169", 0.0),
        ("1,169", "1169", 1.0),
        ("169.00", "169", 1.0),
        ("So x = -24.", "-24", 1.0),
        ("I don't know", "169", 0.0),
        ("", "169", 0.0),
    ],
)
def test_binary_reward_from_final_number(reply, oracle, reward):
    assert score_reply(reply, {"answer": oracle})[0] == reward


def test_raw_score_is_reasoning_gyms_partial_credit():
    reward, raw, extracted = score_reply("-240", {"answer": "-24"})
    assert (reward, raw, extracted) == (0.0, 0.75, "-240")
    reward, raw, extracted = score_reply("The answer is 169", {"answer": "169"})
    assert reward == 1.0 and 0 < raw < 1 and extracted == "169"


words = st.text(alphabet=st.sampled_from("abcdefghij ,:!?\n"), max_size=30)


@given(prefix=words, suffix=st.sampled_from(["", ".", " ", "\n", "!"]), n=st.integers(-10**9, 10**9))
def test_any_sentence_ending_in_the_answer_scores_one(prefix, suffix, n):
    reply = f"{prefix} {n}{suffix}"
    assert extract_final_number(reply) == str(n)
    assert score_reply(reply, {"answer": str(n)})[0] == 1.0


@given(n=st.integers(-10**6, 10**6), delta=st.integers(-1000, 1000).filter(bool))
def test_a_wrong_final_number_scores_zero(n, delta):
    assert score_reply(f"maybe {n} or {n + delta}", {"answer": str(n)})[0] == 0.0
