"""TRL's GRPOTrainer trains a tiny random Llama on the real chain_sum server through `openenv_prime.trl`: the sampler
chooses the rows, sees every group once, evaluates on schedule and resumes exactly from a TRL checkpoint."""

from __future__ import annotations

import json

import pytest

from openenv_prime.evaluation import EvalSchedule
from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig
from tests.trl_integration.tiny import grpo_args, tiny_model, tiny_tokenizer

GROUP = 4
STEPS = 4


class Recorded:
    """What a run told its sampler and the rows it drew, in order."""

    def __init__(self, openenv: OpenEnvTRL):
        self.updates: list[tuple[int, list[float], list[float]]] = []
        self.openenv = openenv
        update = openenv.sampler.update

        def recording_update(task, rewards, costs=None):
            self.updates.append((task.index, list(rewards), list(costs)))
            return update(task, rewards, costs)

        openenv.sampler.update = recording_update

    def draws(self) -> dict[int, int]:
        """draw number -> task index, for every row drawn so far (scored or pending)."""
        rows = self.openenv.rows
        return dict(sorted({**self.drawn, **{d: r["task_index"] for d, r in rows.pending.items()}}.items()))


def train(url, out, *, max_steps=STEPS, resume=None, score=None, schedule=EvalSchedule(every=2), seed=0, **settings):
    """One text-mode run (``settings``: more OpenEnvTRLConfig fields); returns (openenv, trainer, recorded)."""
    from trl import GRPOTrainer

    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=url, group_size=GROUP, seed=seed, **settings), score=score)
    recorded = Recorded(openenv)
    args = grpo_args(out, max_steps=max_steps)
    tokenizer = tiny_tokenizer()
    trainer = GRPOTrainer(model=tiny_model(tokenizer), reward_funcs=[openenv.reward], train_dataset=openenv.dataset(args),
                          args=args, processing_class=tokenizer)
    recorded.drawn = {}
    take = openenv.rows.take

    def recording_take(draw):
        row = take(draw)
        recorded.drawn[draw] = row["task_index"]
        return row

    openenv.rows.take = recording_take
    openenv.attach(trainer, schedule=schedule, per_family=1, max_new_tokens=4, log=out / "evals.jsonl")
    trainer.train(resume_from_checkpoint=resume)
    openenv.close()
    return openenv, trainer, recorded


class UnevenScore:
    """A user's reward: 1.0 for a completion with an even number of characters, so groups come out mixed and
    all-equal; it keeps what it returned, in order."""

    __name__ = "uneven"

    def __init__(self):
        self.returned: list[float] = []

    def __call__(self, completions, **kwargs):
        from openenv_prime.trl.rewards import completion_text

        rewards = [float(len(completion_text(c)) % 2 == 0) for c in completions]
        self.returned += rewards
        return rewards


@pytest.fixture(scope="module")
def run(chain_sum_server, tmp_path_factory):
    out = tmp_path_factory.mktemp("trl-run")
    openenv, trainer, recorded = train(chain_sum_server, out)
    return out, openenv, trainer, recorded


def test_every_group_reaches_update_exactly_once(run):
    _, openenv, trainer, recorded = run
    assert trainer.state.global_step == STEPS
    scored = recorded.drawn
    assert len(scored) == STEPS * 2  # 8 rows of 4 rollouts per step
    assert [index for index, _, _ in recorded.updates] == list(scored.values())  # one update per group, in draw order
    for _, rewards, costs in recorded.updates:
        assert len(rewards) == len(costs) == GROUP
        assert all(1 <= c <= 6 for c in costs)  # generated tokens, within max_completion_length
    # a random model gets chain_sum wrong: every group is all-equal, and each was reported all the same
    assert all(rewards == [0.0] * GROUP for _, rewards, _ in recorded.updates)
    assert openenv.sampler.metrics(per_key=False)["groups"] == STEPS * 2
    # rows the data loader read ahead are pending, drawn but never reported
    assert set(openenv.rows.pending).isdisjoint(scored) and openenv.rows.pending


def test_the_callback_evaluates_at_the_scheduled_steps_and_logs_through_the_trainer(run):
    out, openenv, trainer, _ = run
    logged = [json.loads(line) for line in (out / "evals.jsonl").read_text().splitlines()]
    assert [r["step"] for r in logged] == [0, 2, 4]
    assert [r["episodes"] for r in logged] == [0.0, 2 * 2 * GROUP, 4 * 2 * GROUP]  # the sampler's counters
    assert all(r["n"] == {str(t): 1 for t in range(5)} for r in logged)
    history = [h for h in trainer.state.log_history if "openenv/eval/accuracy" in h]
    assert [h["step"] for h in history] == [0, 2, 4]
    # the eval's log line leaves every step's own line (loss, rewards) in place, eval steps included
    assert [h["step"] for h in trainer.state.log_history if "loss" in h and "reward" in h] == [1, 2, 3, 4]
    assert all(f"openenv/eval/{t}/accuracy" in history[0] for t in range(5))


def test_a_user_reward_is_returned_and_reported_group_by_group(chain_sum_server, tmp_path):
    score = UnevenScore()
    openenv, trainer, recorded = train(chain_sum_server, tmp_path, max_steps=2, score=score, schedule=None)
    reported = [r for _, group, _ in recorded.updates for r in group]
    assert len(recorded.updates) == 4 and reported == score.returned  # every group once, the user's rewards
    mixed = [g for _, g, _ in recorded.updates if len(set(g)) > 1]
    assert openenv.sampler.metrics(per_key=False)["groups_with_signal"] == len(mixed)
    logged = [h["rewards/uneven/mean"] for h in trainer.state.log_history if "rewards/uneven/mean" in h]
    assert logged == pytest.approx([sum(score.returned[:8]) / 8, sum(score.returned[8:]) / 8])


def test_resume_restores_the_sampler_and_draws_what_an_uninterrupted_run_draws(run, chain_sum_server, tmp_path):
    out, _, _, whole = run
    saved = json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())["stateful_callbacks"]["OpenEnvPrime"]
    restored = {}
    from openenv_prime.trl.rows import SamplerRows

    load = SamplerRows.load_state_dict

    def recording_load(self, state):
        load(self, state)
        restored["state"] = self.state_dict()

    SamplerRows.load_state_dict = recording_load
    try:
        _, trainer, resumed = train(chain_sum_server, tmp_path, resume=str(out / "checkpoint-2"))
    finally:
        SamplerRows.load_state_dict = load
    assert restored["state"] == saved["rows"]  # the sampler (RNG included) and the pending rows, exactly
    assert trainer.state.global_step == STEPS
    # steps 3-4 train on the same tasks as the uninterrupted run's steps 3-4
    later = {d: i for d, i in whole.drawn.items() if d >= 4}
    assert resumed.drawn == later
    # evals already logged before the checkpoint are not run again
    assert [r["step"] for r in saved["evals"]] == [0, 2]
    again = [json.loads(line)["step"] for line in (tmp_path / "evals.jsonl").read_text().splitlines()]
    assert again == [4]


@pytest.mark.parametrize("sampler, kwargs", [("uniform", {"over": "keys"}), ("sequential", {})])
def test_trl_trains_with_the_baseline_samplers_and_their_settings(chain_sum_server, tmp_path, sampler, kwargs):
    from openenv_prime.samplers import make_sampler

    openenv, trainer, recorded = train(chain_sum_server, tmp_path, max_steps=2, schedule=None, seed=3,
                                       sampler=sampler, sampler_kwargs=kwargs)
    assert trainer.state.global_step == 2 and len(recorded.updates) == 4
    assert type(openenv.sampler) is type(make_sampler(sampler, openenv.env.tasks))
    assert all(getattr(openenv.sampler, name) == value for name, value in kwargs.items())
    # the draws are the sampler's own: the same sampler built by hand, with the run's seed where it takes one
    by_hand = make_sampler(sampler, openenv.env.tasks, defaults={"seed": 3, "group_size": GROUP}, **kwargs)
    drawn = recorded.draws()
    assert list(drawn.values()) == [task.index for task in by_hand.sample(len(drawn))]
