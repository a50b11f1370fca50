"""Costs the environment reports (`client/engine/spend.py`): a step's `metadata["service_spend"]`, an episode's sum,
a group costless when a scored episode reported none, and the sampler's every-group-or-none refusal told in spend
terms, with the sampler left as it was."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openenv_prime.client.engine import spend
from openenv_prime.samplers import CostsMismatchError, Task, make_sampler

SPENDS = st.one_of(st.none(), st.floats(0, 1e6))


@pytest.mark.parametrize(("value", "read"), [(0.25, 0.25), (3, 3.0), (0, 0.0), (None, None), ("0.5", None), (True, None),
                                             (-1.0, None), (math.nan, None), (math.inf, None), ({"usd": 1}, None)])
def test_a_step_reports_a_finite_spend_of_at_least_zero_or_none(value, read) -> None:
    assert spend.step_spend({spend.SPEND_FIELD: value}) == read
    assert spend.step_spend({}) is None


@given(st.lists(SPENDS, max_size=12))
def test_an_episodes_spend_is_the_sum_of_its_steps_that_reported_one(steps) -> None:
    reported = [s for s in steps if s is not None]
    total = spend.episode_spend(steps)
    assert (total is None) == (not reported)
    if reported:
        assert total == pytest.approx(math.fsum(reported))


@given(st.lists(SPENDS, min_size=1, max_size=8))
def test_a_group_is_costless_when_any_episode_has_no_cost(costs) -> None:
    group = spend.group_costs(costs)
    assert (group is None) == (None in costs)
    if group is not None:
        assert group == costs


def sampler_after_one_group(costs):
    tasks = [Task("train", i, key=str(i % 2)) for i in range(4)]
    sampler = make_sampler("curriculum", tasks, group_size=2)
    sampler.update(tasks[0], [1.0, 0.0], costs)
    return sampler, tasks


@pytest.mark.parametrize(("first", "then", "said"), [([0.5, 0.25], None, "did not all report"),
                                                      (None, [0.5, 0.25], "reported")])
def test_spend_on_some_groups_only_is_refused_in_spend_terms_and_changes_nothing(first, then, said) -> None:
    sampler, tasks = sampler_after_one_group(first)
    before = sampler.state_dict()
    with pytest.raises(CostsMismatchError) as refused:
        spend.update(sampler, tasks[1], [1.0, 1.0], then, source="spend", setting="OpenEnvTRLConfig(cost='spend')")
    message = str(refused.value)
    assert message.startswith("OpenEnvTRLConfig(cost='spend'): ")
    assert f"this group {said} metadata['service_spend']" in message
    assert "report 'service_spend' in the metadata of every step" in message
    assert sampler.state_dict() == before


def test_counted_tokens_keep_the_samplers_own_message() -> None:
    sampler, tasks = sampler_after_one_group([3.0, 4.0])
    with pytest.raises(CostsMismatchError) as refused:
        spend.update(sampler, tasks[1], [1.0, 1.0], None, source="tokens", setting="unused")
    assert "service_spend" not in str(refused.value) and "report costs for every group or for none" in str(refused.value)


def test_spend_reaches_update_as_costs() -> None:
    sampler, tasks = sampler_after_one_group(None)
    spend.update(sampler, tasks[1], [1.0, 0.0], None, source="spend", setting="s")  # costless after costless: fine
    assert sampler.metrics(per_key=False)["groups"] == 2
    with_spend, tasks = sampler_after_one_group([0.5, 0.75])
    spend.update(with_spend, tasks[1], [1.0, 0.0], [1.0, 2.0], source="spend", setting="s")
    assert with_spend.metrics(per_key=False)["cost"] == pytest.approx(4.25)
