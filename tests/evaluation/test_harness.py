"""`EvalSchedule` and `EvalHarness`: in-training evals from a plain loop, against the real chain_sum server."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openenv_prime.evaluation import EvalConfig, EvalHarness, EvalSchedule, OpenAIPolicy
from openenv_prime.samplers import Task, make_sampler
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, chain_sum_rule

ALL_TIERS = range(5)


def rule_policy(correct_tiers):
    """An in-process policy (a plain function of the prompts) that solves chain_sum exactly for ``correct_tiers``."""
    rule = chain_sum_rule(correct_tiers=correct_tiers)
    return lambda prompts: [rule({"messages": p}) for p in prompts]


# ---- EvalSchedule ---------------------------------------------------------------------------------------
@given(every=st.integers(0, 7), steps=st.sets(st.integers(0, 40), max_size=4), first=st.booleans(),
       last=st.one_of(st.none(), st.integers(0, 40)), step=st.integers(0, 60))
def test_schedule_is_due_exactly_on_its_steps(every, steps, first, last, step):
    schedule = EvalSchedule(every=every, steps=tuple(steps), first=first, last=last)
    expected = (first and step == 0) or (every > 0 and step > 0 and step % every == 0) or step in steps or step == last
    assert schedule.due(step) == expected


def test_schedule_with_last_keeps_the_rest():
    schedule = EvalSchedule(every=4, steps=(3,), first=False).with_last(10)
    assert [s for s in range(12) if schedule.due(s)] == [3, 4, 8, 10]


@pytest.mark.parametrize("kwargs, named", [
    ({"every": -1}, "every"), ({"every": 1.5}, "every"), ({"steps": (2, -3)}, "steps"), ({"last": -1}, "last"),
    ({"every": True}, "every"),
])
def test_schedule_refuses_bad_settings_naming_them(kwargs, named):
    with pytest.raises(ValueError, match=f"EvalSchedule.{named}"):
        EvalSchedule(**kwargs)


def test_schedule_refuses_a_negative_step():
    with pytest.raises(ValueError, match="step must be >= 0"):
        EvalSchedule().due(-1)


# ---- EvalHarness ----------------------------------------------------------------------------------------
def test_a_plain_loop_evaluates_on_schedule_with_the_samplers_counters(chain_sum_server, tmp_path):
    sampler = make_sampler("curriculum", [Task("train", i, key=str(i % 5)) for i in range(50)], group_size=4)
    seen = []
    harness = EvalHarness(EvalConfig(base_url=chain_sum_server, per_family=3, max_concurrency=8),
                          EvalSchedule(every=3, last=7), policy=rule_policy({0, 1}), log=tmp_path / "evals.jsonl",
                          on_result=lambda record, result: seen.append((record["step"], result.accuracy)))
    records = {}
    for step in range(8):
        if step:
            for task in sampler.sample(2):
                sampler.update(task, [1.0, 0.0, 1.0, 1.0], [5, 6, 7, 8])
        records[step] = harness.maybe_run(step, sampler, tokens=100 * step)

    assert [s for s, r in records.items() if r is not None] == [0, 3, 6, 7]
    assert [s for s, _ in seen] == [0, 3, 6, 7]
    logged = [json.loads(line) for line in (tmp_path / "evals.jsonl").read_text().splitlines()]
    assert logged == [records[s] for s in (0, 3, 6, 7)] == harness.records
    for record in logged:
        step = record["step"]
        assert record["accuracy"] == {str(t): float(t in {0, 1}) for t in ALL_TIERS}
        assert record["n"] == {str(t): 3 for t in ALL_TIERS}
        assert record["overall"] == pytest.approx(6 / 15)
        assert record["eval_episodes"] == 15 and record["split"] == "test"
        # the sampler's counters as they stood at that step, and the trainer's own
        assert (record["episodes"], record["cost"], record["tokens"]) == (8.0 * step, 52.0 * step, 100 * step)


def test_an_openai_endpoint_is_evaluated_like_an_in_process_policy(chain_sum_server):
    config = EvalConfig(base_url=chain_sum_server, per_family=2, max_concurrency=4)
    with ScriptedOpenAIServer(chain_sum_rule(correct_tiers={2})) as url:
        harness = EvalHarness(config, EvalSchedule(), policy=OpenAIPolicy(url, "scripted"))
        record = harness.maybe_run(0)
    local = EvalHarness(config, EvalSchedule(), policy=rule_policy({2})).maybe_run(0)
    assert record["accuracy"] == local["accuracy"] == {str(t): float(t == 2) for t in ALL_TIERS}
    assert "episodes" not in record  # no sampler given: no sampler counters


def test_a_step_already_recorded_is_not_evaluated_again(chain_sum_server):
    calls = []

    def policy(prompts):
        calls.append(len(prompts))
        return ["0"] * len(prompts)

    done = [{"type": "eval", "step": 0, "accuracy": {}}]
    harness = EvalHarness(EvalConfig(base_url=chain_sum_server, per_family=1), EvalSchedule(every=2), policy=policy,
                          done=done)
    assert harness.maybe_run(0) is None and not harness.due(0)
    assert harness.maybe_run(1) is None
    assert harness.maybe_run(2)["step"] == 2
    assert calls and [r["step"] for r in harness.records] == [0, 2]


def test_a_policy_given_to_maybe_run_replaces_the_harnesss(chain_sum_server):
    harness = EvalHarness(EvalConfig(base_url=chain_sum_server, per_family=2), EvalSchedule(every=1),
                          policy=rule_policy(set()))
    assert harness.maybe_run(0)["overall"] == 0.0
    assert harness.maybe_run(1, policy=rule_policy(ALL_TIERS))["overall"] == 1.0


def test_bad_calls_are_refused_with_nothing_recorded(chain_sum_server, tmp_path):
    harness = EvalHarness(EvalConfig(base_url=chain_sum_server, per_family=1), EvalSchedule(), log=tmp_path / "e.jsonl")
    with pytest.raises(ValueError, match="no policy"):
        harness.maybe_run(0)
    with pytest.raises(ValueError, match=r"\['episodes', 'overall'\] would overwrite"):
        harness.maybe_run(0, policy=rule_policy(ALL_TIERS), episodes=3, overall=1.0)
    assert harness.records == [] and not (tmp_path / "e.jsonl").exists()
    with pytest.raises(TypeError, match="EvalSchedule"):
        EvalHarness(EvalConfig(base_url=chain_sum_server), {"every": 2})
    with pytest.raises(TypeError, match="complete"):
        EvalHarness(EvalConfig(base_url=chain_sum_server), EvalSchedule(), policy="gpt")


# ---- the model on the calling thread, shares joined there -------------------------------------------------------
class TwoShards:
    """Process ``index`` of 2 in one process: its gather returns this process's items beside the other process's,
    which ``other`` makes from the items (the harness's status and result), and records the thread it ran on."""

    count = 2

    def __init__(self, index, other):
        self.index = index
        self.other = other
        self.threads = []

    def gather(self, items):
        import threading

        self.threads.append(threading.current_thread())
        theirs = self.other(items)
        return [*items, *theirs] if self.index == 0 else [*theirs, *items]


def test_a_function_policy_and_the_shards_gather_run_on_the_thread_that_called_maybe_run(chain_sum_server):
    """A trainer's model and collectives belong to its thread (CUDA's current device is per thread): the harness
    plays the eval's sockets elsewhere and hands every model call back."""
    import threading

    rule = rule_policy(set(ALL_TIERS))
    threads = []

    def policy(prompts):
        threads.append(threading.current_thread())
        return rule(prompts)

    shards = TwoShards(0, lambda items: items)  # the other process played the same share
    harness = EvalHarness(EvalConfig(base_url=chain_sum_server, per_family=2, max_concurrency=4), EvalSchedule())
    record = harness.maybe_run(0, policy=policy, shards=shards)
    assert threads and set(threads) == {threading.current_thread()}
    assert shards.threads == [threading.current_thread()]
    assert record["overall"] == 1.0 and record["eval_episodes"] == 10  # share 0 is tasks 0::2 of 10, twice


def test_a_policy_that_raises_fails_the_eval_with_its_error(chain_sum_server):
    def broken(prompts):
        raise RuntimeError("out of memory (scripted)")

    harness = EvalHarness(EvalConfig(base_url=chain_sum_server, per_family=1), EvalSchedule())
    with pytest.raises(RuntimeError, match=r"out of memory \(scripted\)"):
        harness.maybe_run(0, policy=broken)
    assert harness.records == []


def test_a_share_that_failed_elsewhere_fails_the_eval_on_this_process_naming_it(chain_sum_server):
    shards = TwoShards(0, lambda items: [("error", "ServerUnreachableError: cannot reach the server (scripted)")])
    harness = EvalHarness(EvalConfig(base_url=chain_sum_server, per_family=1), EvalSchedule())
    with pytest.raises(RuntimeError, match=r"the eval failed on process 1 of 2: process 1: ServerUnreachableError"):
        harness.maybe_run(0, policy=rule_policy(set(ALL_TIERS)), shards=shards)
    assert harness.records == []


def test_a_share_that_stopped_gives_the_stopped_result_with_its_reason_not_an_index_error(chain_sum_server):
    """Process 1's environment failed episode after episode, so its share holds only the episodes it finished.
    Process 0 joins it: every finished episode in the order one process plays them, and the stop's reason. (Every
    process joins the same gathered shares, so every process holds this result.)"""
    config = EvalConfig(base_url=chain_sum_server, per_family=3, max_concurrency=4)
    whole = []
    EvalHarness(config, EvalSchedule(), on_result=lambda record, result: whole.append(result)).maybe_run(
        0, policy=rule_policy({0, 1, 2}))
    theirs = whole[0].model_copy(update={"results": whole[0].results[1::2][:2], "stopped": "the environment failed"})
    joined = []
    record = EvalHarness(config, EvalSchedule(), on_result=lambda record, result: joined.append(result)).maybe_run(
        0, policy=rule_policy({0, 1, 2}), shards=TwoShards(0, lambda items: [("ok", theirs)]))
    expected = [*whole[0].results[0::2], *whole[0].results[1::2][:2]]
    key = lambda r: (int(r.family), r.index)  # noqa: E731
    assert [key(r) for r in joined[0].results] == sorted(key(r) for r in expected)
    assert joined[0].stopped == record["stopped"] == "process 1 of 2: the environment failed"
    assert record["eval_episodes"] == 8 + 2 and whole[0].stopped is None
