"""`run_eval` against the real chain_sum OpenEnv server and the scripted OpenAI-compatible model."""

from __future__ import annotations

import asyncio
import socket

import pytest
from pydantic import ValidationError

from openenv_prime.client.wire.errors import OpenEnvError, UnknownSplitError
from openenv_prime.evaluation import EvalConfig, ModelEndpointError, OpenAIPolicy, run_eval, run_eval_async
from openenv_prime.testing.scripted_openai import (
    ScriptedOpenAIServer,
    chain_sum_rule,
    chain_sum_terms,
    chain_sum_tier,
    last_user_text,
)

CORRECT_TIERS = {0, 2, 4}


@pytest.fixture(scope="module")
def scripted():
    server = ScriptedOpenAIServer(chain_sum_rule(correct_tiers=CORRECT_TIERS))
    with server as base_url:
        yield server, base_url


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_per_family_accuracy_follows_the_models_rule(chain_sum_server, scripted):
    server, model_url = scripted
    config = EvalConfig(base_url=chain_sum_server, per_family=6, seed=3, max_concurrency=8)
    result = run_eval(config, OpenAIPolicy(model_url, "scripted"))

    assert result.env_name == "chain_sum"
    assert result.accuracy_by_family() == {str(t): float(t in CORRECT_TIERS) for t in range(5)}
    assert [s.tasks for s in result.families] == [6] * 5
    assert result.accuracy == pytest.approx(18 / 30)
    assert len({r.key for r in result.results}) == 30
    for r in result.results:
        assert r.key.startswith(f"chain_sum/test/t{r.family}/")
        assert (r.steps, r.done, r.invalid_actions, r.split) == (1, True, 0, "test")
        assert r.success == (int(r.family) in CORRECT_TIERS) == (r.reward == 1.0)
    assert [(int(r.family), r.index) for r in result.results] == sorted((int(r.family), r.index) for r in result.results)
    # every prompt carried the system message and the tier's question, and the model saw each task once
    mine = server.requests[-30:]
    assert all(req["messages"][0] == {"role": "system", "content": config.system_prompt} for req in mine)
    assert all(req["temperature"] == 0.0 for req in mine)
    tiers = sorted(chain_sum_tier(chain_sum_terms(last_user_text(req))) for req in mine)
    assert tiers == sorted(int(r.family) for r in result.results)


def test_same_seed_repeats_and_other_seeds_choose_other_tasks(chain_sum_server, scripted):
    _, model_url = scripted
    policy = OpenAIPolicy(model_url, "scripted")
    first = run_eval(EvalConfig(base_url=chain_sum_server, per_family=4, seed=11), policy)
    again = run_eval(EvalConfig(base_url=chain_sum_server, per_family=4, seed=11, max_concurrency=3), policy)
    other = run_eval(EvalConfig(base_url=chain_sum_server, per_family=4, seed=12), policy)
    assert again.results == first.results and again.families == first.families
    assert {r.key for r in other.results} != {r.key for r in first.results}
    assert other.accuracy_by_family() == first.accuracy_by_family()


class _InProcessPolicy:
    """Like the trainer's MLX policy: answers in-process, one batch per round; records the batches."""

    def __init__(self, replies_by_tier):
        self.replies_by_tier = replies_by_tier
        self.batches: list[int] = []

    async def complete(self, prompts):
        self.batches.append(len(prompts))
        out = []
        for messages in prompts:
            terms = chain_sum_terms(next(m["content"] for m in messages if m["role"] == "user"))
            out.append(self.replies_by_tier(chain_sum_tier(terms), sum(terms)))
        return out


def test_in_process_policy_gets_batches_and_odd_replies_score_zero(chain_sum_server):
    odd = {0: "", 1: "9" * 20000, 2: "the answer is unknown", 3: "  {total}  ", 4: "{total}"}
    policy = _InProcessPolicy(lambda tier, total: odd[tier].format(total=total))
    config = EvalConfig(base_url=chain_sum_server, per_family=3, seed=0, max_concurrency=4, system_prompt=None)
    result = asyncio.run(run_eval_async(config, policy))
    # waves of 4 over tiers 0,0,0,1 | 1,1,2,2 | 2,3,3,3 | 4,4,4: an empty reply is an invalid action (as in
    # training), fed back three times, so the first wave's tier-0 episodes take three more rounds
    assert policy.batches == [4, 3, 3, 3, 4, 4, 3]
    assert result.accuracy_by_family() == {"0": 0.0, "1": 0.0, "2": 0.0, "3": 1.0, "4": 1.0}
    empty = [r for r in result.results if r.family == "0"]
    assert all((r.steps, r.invalid_actions, r.done, r.stop, r.reward) == (0, 4, False, "invalid_action", 0.0) for r in empty)
    assert all(r.steps == 1 and r.done and r.stop == "done" for r in result.results if r.family != "0")
    assert [r.reply for r in empty] == ["", "", ""]
    assert result.ended_invalid == 3 and result.unscored == 0


def test_policy_with_the_wrong_number_of_replies_is_named(chain_sum_server):
    class Short:
        async def complete(self, prompts):
            return prompts[:-1] and ["1"] * (len(prompts) - 1)

    with pytest.raises(ValueError, match="Short.complete.*one reply text per prompt"):
        run_eval(EvalConfig(base_url=chain_sum_server, per_family=1), Short())


def test_rejected_actions_are_fed_back_then_give_up(chain_sum_server, scripted):
    server, model_url = scripted
    before = len(server.requests)
    config = EvalConfig(base_url=chain_sum_server, per_family=1, families=["1"], action_field="answr",
                        max_invalid_actions=2)
    result = run_eval(config, OpenAIPolicy(model_url, "scripted"))
    [r] = result.results
    assert (r.invalid_actions, r.steps, r.reward, r.success) == (3, 0, 0.0, False)
    asked = server.requests[before:]
    assert len(asked) == 3
    assert "not a valid action" in asked[-1]["messages"][-1]["content"]


def test_server_down_names_its_url(scripted):
    _, model_url = scripted
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(OpenEnvError, match=url.replace(".", r"\.")):
        run_eval(EvalConfig(base_url=url, timeout=2), OpenAIPolicy(model_url, "scripted"))


def test_unknown_split_is_named(chain_sum_server, scripted):
    _, model_url = scripted
    with pytest.raises(UnknownSplitError, match="dev"):
        run_eval(EvalConfig(base_url=chain_sum_server, split="dev"), OpenAIPolicy(model_url, "scripted"))


def test_model_endpoint_down_names_its_url(chain_sum_server):
    url = f"http://127.0.0.1:{_free_port()}/v1"
    with pytest.raises(ModelEndpointError, match=f"{url}/chat/completions".replace(".", r"\.")):
        run_eval(EvalConfig(base_url=chain_sum_server, per_family=1), OpenAIPolicy(url, "m", timeout=5))


def test_model_endpoint_errors_are_reported_with_status(chain_sum_server):
    with ScriptedOpenAIServer(chain_sum_rule(correct_tiers=())) as model_url:
        bad = OpenAIPolicy(model_url.removesuffix("/v1") + "/nothing-here", "m")
        with pytest.raises(ModelEndpointError, match="HTTP 404"):
            run_eval(EvalConfig(base_url=chain_sum_server, per_family=1), bad)


def test_busy_model_endpoint_is_retried_then_reported(chain_sum_server):
    config = EvalConfig(base_url=chain_sum_server, per_family=1, families=["0"])
    with ScriptedOpenAIServer(chain_sum_rule(correct_tiers={0}), busy_first=2) as model_url:
        assert run_eval(config, OpenAIPolicy(model_url, "m", retries=2)).accuracy == 1.0
    with ScriptedOpenAIServer(chain_sum_rule(correct_tiers={0}), busy_first=2) as model_url:
        with pytest.raises(ModelEndpointError, match="HTTP 503"):
            run_eval(config, OpenAIPolicy(model_url, "m", retries=1))


def test_config_rejects_unknown_and_bad_fields():
    with pytest.raises(ValidationError, match="per_famly"):
        EvalConfig(per_famly=3)
    with pytest.raises(ValidationError, match="per_family"):
        EvalConfig(per_family=0)
    with pytest.raises(ValidationError, match=r"reset_kwargs may not set \['index'\]"):
        EvalConfig(reset_kwargs={"index": 3})
    assert EvalConfig().split is None  # the test split by the rule: the first of test, eval, validation listed


def test_run_eval_inside_an_event_loop_points_to_the_async_form(scripted):
    async def main():
        with pytest.raises(RuntimeError, match="run_eval_async"):
            run_eval(EvalConfig(), OpenAIPolicy(scripted[1], "m"))

    asyncio.run(main())


def test_openai_policy_rejects_bad_settings():
    with pytest.raises(ValueError, match="http"):
        OpenAIPolicy("127.0.0.1:8080", "m")
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAIPolicy("http://127.0.0.1:8080", "m", max_concurrency=0)
    assert OpenAIPolicy("http://h:1", "m").url == "http://h:1/v1/chat/completions"
    assert OpenAIPolicy("http://h:1/v1/", "m").url == "http://h:1/v1/chat/completions"


class _BlockingPolicy:
    """An in-process policy that holds the event loop past the server's keepalive, as CPU generation can: its
    first call blocks until the server has closed ``sockets`` more WebSocket connections."""

    def __init__(self, server_url: str, sockets: int):
        self.server_url, self.sockets, self.blocked = server_url, sockets, False

    async def complete(self, prompts):
        import httpx

        from tests.support.waiting import until

        def closed() -> int:
            return int(httpx.get(f"{self.server_url}/closed_sockets", timeout=10).text)

        if not self.blocked:
            self.blocked, before = True, closed()
            until(lambda: closed() >= before + self.sockets, f"the server to close {self.sockets} unanswered sockets",
                  interval=0.1)
        return [str(sum(chain_sum_terms(p[-1]["content"]))) for p in prompts]


def test_blocking_policy_outlasting_keepalive_gets_its_episodes_replayed(tmp_path):
    """On a server whose keepalive closes an unanswered socket after ~1 s, a policy blocking past it loses both sockets."""
    import os
    import sys
    from pathlib import Path

    from tests.support.processes import free_port, serving

    script = Path(__file__).resolve().parents[1] / "support" / "short_keepalive_server.py"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    environ = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    with serving([sys.executable, str(script), str(port)], f"{url}/health", tmp_path / "log", env=environ):
        config = EvalConfig(base_url=url, per_family=1, families=["0", "3"])
        result = run_eval(config, _BlockingPolicy(url, sockets=2))
    assert result.reconnects == 2
    assert result.accuracy_by_family() == {"0": 1.0, "3": 1.0}
    assert [r.steps for r in result.results] == [1, 1]


def test_capped_server_gets_as_many_sessions_as_it_admits():
    from openenv_prime.envs.launch import local_server

    policy = _InProcessPolicy(lambda tier, total: str(total if tier in CORRECT_TIERS else total + 1))
    with local_server("chain-sum", tiers=5, max_sessions=3) as capped:
        config = EvalConfig(base_url=capped, per_family=3, seed=1, max_concurrency=16)
        result = run_eval(config, policy)
    assert policy.batches == [3] * 5  # 16 asked for, 3 admitted: waves of 3
    assert len(result.results) == 15 and all(r.done for r in result.results)
    assert result.accuracy_by_family() == {str(t): float(t in CORRECT_TIERS) for t in range(5)}


@pytest.mark.parametrize("count", [2, 3])
def test_shards_of_an_eval_combine_into_the_eval_one_process_plays(chain_sum_server, count):
    """Processes that share an eval each play tasks k::n; joined, they are the one-process eval, task for task."""
    from openenv_prime.evaluation.result import combine

    replies = {0: "{total}", 1: "", 2: "{total}", 3: "no", 4: "{total}"}  # tier 1's invalid replies take more rounds
    config = EvalConfig(base_url=chain_sum_server, per_family=3, seed=2, max_concurrency=4, system_prompt=None)

    def play(shard):
        policy = _InProcessPolicy(lambda tier, total: replies[tier].format(total=total))
        return asyncio.run(run_eval_async(config, policy, shard=shard))

    whole = play((0, 1))
    parts = [play((k, count)) for k in range(count)]
    assert sorted(len(p.results) for p in parts) == sorted(len(range(k, 15, count)) for k in range(count))
    joined = combine(parts)
    same = ("results", "families", "accuracy", "mean_reward", "truncated", "ended_invalid", "unscored", "split")
    assert all(getattr(joined, name) == getattr(whole, name) for name in same)
    assert joined.elapsed_s == max(p.elapsed_s for p in parts)
    with pytest.raises(ValueError, match=r"shard \(2, 2\)"):
        asyncio.run(run_eval_async(config, _InProcessPolicy(lambda tier, total: ""), shard=(2, 2)))


def test_a_plain_function_policy_runs_on_the_calling_thread(chain_sum_server):
    """An in-process model is a function of the prompts (`openenv-prime eval --model-path`): run_eval calls it on the
    thread that asked for the eval, where its device is set, while the eval's sockets run elsewhere."""
    import threading

    rule, here, seen = chain_sum_rule(correct_tiers=CORRECT_TIERS), threading.current_thread(), []

    def policy(prompts):
        seen.append(threading.current_thread())
        return [rule({"messages": messages}) for messages in prompts]

    result = run_eval(EvalConfig(base_url=chain_sum_server, per_family=2, seed=3), policy)
    assert result.accuracy_by_family() == {str(t): float(t in CORRECT_TIERS) for t in range(5)}
    assert seen and all(thread is here for thread in seen)
