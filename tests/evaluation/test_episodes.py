"""Episodes you can read: what an eval writes of each episode (the prompts, the replies, each step's reward, invalid
actions, tokens), from a plain loop's harness and from `openenv-prime eval`, and `openenv-prime show` printing them;
against the real chain_sum server."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openenv_prime.cli import main
from openenv_prime.evaluation import EvalConfig, EvalHarness, EvalSchedule, OpenAIPolicy, TaskResult
from openenv_prime.evaluation.episodes import first_per_family, read_episodes
from openenv_prime.evaluation.show import choose
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, chain_sum_rule, chain_sum_terms, chain_sum_tier

TIERS = [str(t) for t in range(5)]


def empty_first(solved_tiers):
    """Replies nothing to a question (an invalid action the eval feeds back), then answers: right for
    ``solved_tiers``, one off for the others."""

    def policy(prompts):
        replies = []
        for messages in prompts:
            terms = chain_sum_terms(next(m["content"] for m in messages if m["role"] == "user"))
            if messages[-1]["role"] == "user" and len(messages) <= 2:
                replies.append("")
            else:
                replies.append(str(sum(terms) + (chain_sum_tier(terms) not in solved_tiers)))
        return replies

    return policy


def test_the_harness_writes_the_first_episodes_of_each_family_of_every_eval(chain_sum_server, tmp_path):
    path = tmp_path / "episodes.jsonl"
    harness = EvalHarness(EvalConfig(base_url=chain_sum_server, per_family=3, max_concurrency=8),
                          EvalSchedule(steps=(2,)), policy=empty_first({0, 1}), episodes=path, episodes_per_family=2,
                          on_result=lambda record, result: results.append(result))
    results = []
    for step in range(4):
        harness.maybe_run(step)
    rows = read_episodes(path)

    assert [row["step"] for row in rows] == [0] * 10 + [2] * 10
    for step, result in zip((0, 2), results):
        mine = [row for row in rows if row["step"] == step]
        # the first two of each family, in the eval's order, as the result holds them
        expected = [r for f in TIERS for r in [r for r in result.results if r.family == f][:2]]
        assert [(row["family"], row["index"]) for row in mine] == [(r.family, r.index) for r in expected]
    for row in rows:
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["system", "user", "assistant", "user", "assistant"]
        question, feedback = row["messages"][1]["content"], row["messages"][3]["content"]
        assert chain_sum_terms(question) is not None and "empty" in feedback
        assert row["messages"][4]["content"] == row["reply"]
        assert row["invalid_actions"] == 1 and row["turns"] == 2 and row["stop"] == "done" and row["error"] is None
        assert row["step_rewards"] == [row["reward"]] and row["success"] == (row["family"] in {"0", "1"})
        assert row["tokens"] is None  # a plain function reports no tokens


def test_replies_from_an_endpoint_carry_their_tokens(chain_sum_server, tmp_path):
    path = tmp_path / "episodes.jsonl"
    with ScriptedOpenAIServer(lambda request: "I think it is 12") as url:
        harness = EvalHarness(EvalConfig(base_url=chain_sum_server, per_family=1, families=["0"]),
                              EvalSchedule(), policy=OpenAIPolicy(url, "scripted"), episodes=path)
        harness.maybe_run(0)
    (row,) = read_episodes(path)
    assert row["reply"] == "I think it is 12" and row["tokens"] == 5  # the scripted model counts words as tokens


def test_the_harness_refuses_a_bad_episodes_per_family(chain_sum_server):
    for bad in (0, -2, True):
        with pytest.raises(ValueError, match="episodes_per_family must be at least 1"):
            EvalHarness(EvalConfig(base_url=chain_sum_server), EvalSchedule(), episodes_per_family=bad)


def test_the_report_keeps_its_old_shape_and_reads_back():
    """The conversation goes to the episodes file, not the report; a report written before these fields reads back."""
    old = {"key": "k", "family": "0", "split": "test", "index": 3, "reward": 1.0, "success": True, "reply": "5",
           "steps": 1, "done": True, "invalid_actions": 0}
    result = TaskResult(**old, messages=[{"role": "user", "content": "1 + 4 ="}], step_rewards=[1.0], tokens=2)
    dumped = result.model_dump(mode="json")
    assert "messages" not in dumped and "step_rewards" not in dumped and dumped["tokens"] == 2
    assert TaskResult.model_validate(old).messages == []


@given(families=st.lists(st.sampled_from("abc"), max_size=12), k=st.one_of(st.none(), st.integers(1, 4)))
def test_first_per_family_keeps_the_first_k_of_each_family_in_order(families, k):
    results = [TaskResult(key=str(i), family=f, split="test", index=i, reward=0.0, success=False, reply="",
                          steps=1, done=True, invalid_actions=0) for i, f in enumerate(families)]
    kept = first_per_family(results, k)
    assert [r.index for r in kept] == sorted(r.index for r in kept)  # a subsequence, in order
    for family in set(families):
        mine = [r.index for r in results if r.family == family]
        assert [r.index for r in kept if r.family == family] == (mine if k is None else mine[:k])


def test_show_chooses_the_last_step_and_refuses_what_the_file_lacks():
    rows = [{"step": s, "family": f, "split": "test", "index": i, "success": i % 2 == 0}
            for s in (0, 5) for i, f in enumerate("aab")]
    assert [(r["step"], r["index"]) for r in choose(rows)] == [(5, 0), (5, 1), (5, 2)]
    assert [r["index"] for r in choose(rows, step=0, family="a", failed=True)] == [1]
    # an eval logged twice for one step (a resumed run) counts once, as last logged
    again = rows + [{**rows[-1], "success": False}]
    assert [r["success"] for r in choose(again, limit=5)] == [True, False, False]
    with pytest.raises(ValueError, match=r"no episodes of step 3; the file has steps \[0, 5\]"):
        choose(rows, step=3)
    with pytest.raises(ValueError, match=r"no episodes of family 'c'; the families are \['a', 'b'\]"):
        choose(rows, family="c")


@pytest.fixture(scope="module")
def model_url():
    with ScriptedOpenAIServer(chain_sum_rule(correct_tiers={1, 3})) as url:
        yield url


def test_the_eval_command_writes_every_episode_and_show_prints_them(chain_sum_server, model_url, tmp_path, capsys,
                                                                    monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # rich wraps nothing
    out = tmp_path / "report.json"
    code = main(["eval", "--base-url", chain_sum_server, "--model", "scripted", "--model-base-url", model_url,
                 "--per-family", "2", "--out", str(out)])
    assert code == 0
    report = json.loads(out.read_text())
    rows = read_episodes(tmp_path / "report.episodes.jsonl")
    assert report["episodes_file"] == "report.episodes.jsonl"
    assert [(r["family"], r["index"], r["reward"]) for r in rows] == \
        [(r["family"], r["index"], r["reward"]) for r in report["results"]]  # every episode, none left out
    assert all("step" not in r and r["messages"][-1] == {"role": "assistant", "content": r["reply"]} for r in rows)
    assert all(r["tokens"] == 1 for r in rows)  # one word, one token for the scripted model
    capsys.readouterr()

    assert main(["show", str(out), "--family", "3", "-n", "1"]) == 0
    shown = capsys.readouterr().out
    first = next(r for r in rows if r["family"] == "3")
    question = first["messages"][1]["content"]
    assert question in shown and f"reward {first['reward']:g} (solved)" in shown
    assert "1 episode(s) of" in shown and "family 3" in shown

    assert main(["show", str(tmp_path / "nothing.json")]) == 2
    assert "no episodes file" in capsys.readouterr().err


def test_no_episodes_writes_none(chain_sum_server, model_url, tmp_path):
    out = tmp_path / "report.json"
    assert main(["eval", "--base-url", chain_sum_server, "--model", "scripted", "--model-base-url", model_url,
                 "--per-family", "1", "--families", "0", "--no-episodes", "--out", str(out)]) == 0
    assert "episodes_file" not in json.loads(out.read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
