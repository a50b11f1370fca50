"""TRL's GRPOTrainer on two processes (`torchrun --nproc_per_node 2`, CPU, gloo) through `openenv_prime.trl`: one
sampler for the whole run, replicated on every process. Every group is updated once on every process, the copies end
identical, the draws are those of a one-process run with the same rewards, evals give one record per scheduled step,
and a resumed run restores the sampler exactly, on two processes or on one. Each run is processes_run.py."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import free_port

SCRIPT = Path(__file__).with_name("processes_run.py")
GROUP = 4
STEPS = 4
ROWS_PER_STEP = 2  # 4 completions on each of 2 processes, or 8 on one: 2 tasks x 4 rollouts


def launch(processes: int, url: str, out: Path, *options: str, fails: bool = False) -> list[dict] | str:
    """processes_run.py on ``processes`` processes (torchrun for more than one, plain python for one); what each wrote
    (``fails``: the run must fail; its output)."""
    if processes == 1:
        command = [sys.executable, str(SCRIPT)]
    else:
        command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(processes),
                   "--master_port", str(free_port()), str(SCRIPT)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run([*command, "--url", url, "--out", str(out), *options], capture_output=True, text=True,
                          timeout=600, env=env)
    if fails:
        assert done.returncode != 0, f"{' '.join(command)} did not fail:\n{done.stdout[-4000:]}"
        return done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-6000:]}"
    return [json.loads((out / f"process-{i}.json").read_text()) for i in range(processes)]


@pytest.fixture(scope="module")
def runs(chain_sum_server, gold_fields_server, tmp_path_factory):
    """Text mode on 2 processes and on 1 (the same generation batch), the 2-process run resumed on 2 processes (evals
    in lockstep, one episode at a time) and on 1, and tool mode on 2 processes."""
    out = {name: tmp_path_factory.mktemp(name) for name in ("two", "one", "resumed", "resumed_on_one", "tool")}
    made = {"two": launch(2, chain_sum_server, out["two"]),
            "one": launch(1, chain_sum_server, out["one"], "--per-device", "8")}
    checkpoint = str(out["two"] / "checkpoint-2")
    made["resumed"] = launch(2, chain_sum_server, out["resumed"], "--resume", checkpoint, "--lockstep",
                             "--max-sessions", "2")
    made["resumed_on_one"] = launch(1, chain_sum_server, out["resumed_on_one"], "--resume", checkpoint,
                                    "--per-device", "8")
    made["tool"] = launch(2, gold_fields_server, out["tool"], "--mode", "tool", "--train-split", "test",
                          "--test-split", "test")
    return made, out


def expected_rewards(task: int) -> list[float]:
    """processes_run.PositionScore's rewards for a group of ``task``."""
    return [float(position < task % 5) for position in range(GROUP)]


def tasks_and_rewards(run: dict) -> list[tuple[int, list[float]]]:
    return [(task, rewards) for task, rewards, _ in run["updates"]]


def comparable(state: dict) -> dict:
    """A rows state without the sampler's summed costs (generated lengths differ between runs, draws do not) and the
    process count it was saved on."""
    sampler = json.loads(json.dumps(state["sampler"]))
    sampler["stats"].pop("cost")
    return {**{k: v for k, v in state.items() if k != "processes"}, "sampler": sampler}


@pytest.mark.parametrize("name", ["two", "tool"])
def test_every_group_is_updated_exactly_once_on_every_process_in_draw_order(runs, name):
    made, _ = runs
    first, second = made[name]
    assert first["processes"] == second["processes"] == 2 and first["steps"] == STEPS
    assert first["updates"] == second["updates"]  # the same calls, in the same order, costs included
    assert first["scored"] == second["scored"] and len(first["scored"]) == STEPS * ROWS_PER_STEP
    assert [task for task, _ in tasks_and_rewards(first)] == list(first["scored"].values())  # one per draw, in order
    for task, rewards, costs in first["updates"]:
        assert rewards == expected_rewards(task)  # every completion of the group, from whichever process scored it
        assert len(costs) == GROUP and all(1 <= c <= 12 for c in costs)
    kinds = {len(set(rewards)) for _, rewards in tasks_and_rewards(first)}
    assert first["groups"] == STEPS * ROWS_PER_STEP and (1 in kinds or name == "tool")  # all-equal groups reported too
    assert first["state"] == second["state"]  # the copies end identical
    assert set(first["scored"]).isdisjoint(int(p["draw"]) for p in first["state"]["pending"])


def test_the_draws_are_those_of_a_one_process_run_with_the_same_rewards(runs):
    made, _ = runs
    (two, _), (one,) = made["two"], made["one"]
    assert one["processes"] == 1
    assert tasks_and_rewards(two) == tasks_and_rewards(one) and two["scored"] == one["scored"]
    assert comparable(two["state"]) == comparable(one["state"])  # RNG, counters, estimates and pending rows
    assert any(len(set(rewards)) == 1 for _, rewards in tasks_and_rewards(one))


def test_evals_give_one_record_per_scheduled_step_on_every_process(runs):
    made, out = runs
    for name in ("two", "tool"):
        first, second = made[name]
        assert [r["step"] for r in first["evals"]] == [0, 2, 4] and first["evals"] == second["evals"]
        lines = [json.loads(line) for line in (out[name] / "evals.jsonl").read_text().splitlines()]
        assert lines == first["evals"]  # written once, by the main process
        assert [h["step"] for h in first["logged_evals"]] == [0, 2, 4]
        episodes = [json.loads(line) for line in (out[name] / "episodes.jsonl").read_text().splitlines()]
        assert [e["step"] for e in episodes] == [r["step"] for r in first["evals"] for _ in range(r["eval_episodes"])]
        for episode in episodes:  # what the model was asked and replied, readable after the run (main process only)
            assert episode["messages"][0]["role"] in ("system", "user") and episode["messages"][-1]["role"] == "assistant"
            assert len(episode["step_rewards"]) == episode["steps"]  # each accepted step's reward
            replies = sum(m["role"] == "assistant" for m in episode["messages"])  # tool mode: the call-less one too
            assert 1 <= episode["tokens"] <= 4 * replies  # max_new_tokens=4 per reply
        assert [r["episodes"] for r in first["evals"]] == [0, 2 * ROWS_PER_STEP * GROUP, 4 * ROWS_PER_STEP * GROUP]
    two = made["two"][0]["evals"]
    assert all(r["n"] == {str(tier): 1 for tier in range(5)} and r["eval_episodes"] == 5 for r in two)  # shared, whole
    one = made["one"][0]["evals"]
    assert [r["n"] for r in one] == [r["n"] for r in two]  # the same tasks as on one process


def test_a_resumed_two_process_run_restores_the_sampler_exactly_and_draws_on(runs):
    made, out = runs
    saved = json.loads((out["two"] / "checkpoint-2" / "trainer_state.json").read_text())
    saved = saved["stateful_callbacks"]["OpenEnvPrime"]
    for name in ("resumed", "resumed_on_one"):
        for process in made[name]:
            restored = {**saved["rows"], "processes": process["processes"]}
            assert process["restored"] == restored  # sampler (RNG included) and pending rows, exactly
            assert process["steps"] == STEPS
            later = {d: t for d, t in made["two"][0]["scored"].items() if int(d) >= 2 * ROWS_PER_STEP}
            assert process["scored"] == later  # the tasks the uninterrupted run trained on
            assert tasks_and_rewards(process) == tasks_and_rewards(made["two"][0])[2 * ROWS_PER_STEP:]
            assert comparable(process["state"]) == comparable(made["two"][0]["state"])
            assert [r["step"] for r in process["evals"]] == [0, 2, 4]  # the two before the checkpoint, restored
    lines = (out["resumed"] / "evals.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [4]


def test_evals_in_lockstep_make_every_process_call_the_model_equally_often(runs):
    made, _ = runs
    calls = [process["eval_generate"] for process in made["resumed"]]
    assert sum(n for _, n in calls[0]) == sum(n for _, n in calls[1])
    # one episode at a time: the process with fewer episodes joins the other's last rounds on a filler prompt
    assert any(prompts == 0 for prompts, _ in calls[0] + calls[1])
    assert all(n == math.ceil(p / 32) or p == 0 for p, n in calls[0] + calls[1])


def test_copies_that_differ_stop_the_run_on_every_process_with_a_message(chain_sum_server, tmp_path):
    output = launch(2, chain_sum_server, tmp_path, "--diverge", fails=True)
    assert "ReplicaMismatch" in output and "differ between the training processes" in output
    assert output.count("same OpenEnvTRLConfig (seed, sampler, sampler_kwargs)") == 2  # both processes stopped, saying why
    assert not list(tmp_path.glob("process-*.json"))


@pytest.mark.parametrize("name", ["two", "resumed", "tool"])
def test_every_collective_runs_on_the_trainers_thread(runs, name):
    """Text mode with shared evals and checkpoints, resume with lockstep evals, tool mode: every torch.distributed
    call (the package's, TRL's, accelerate's) ran on the thread that runs the trainer, or after the package bound
    the device on its thread; on GPUs any other thread would use GPU 0."""
    made, _ = runs
    for process in made[name]:
        calls = process["collectives"]
        off = [call for call in calls if not call[2] and not call[3]]
        assert not off, f"collectives off the trainer's thread: {off[:5]}"
        ours = [call for call in calls if call[4]]
        assert len(ours) >= STEPS  # rows, rewards, digests and evals went through torch.distributed
        assert {name for name, *_ in ours} == {"all_gather_object"}


def test_processes_that_resume_different_checkpoints_are_refused_at_train_begin(runs, chain_sum_server, tmp_path):
    """Process 1 resumes a stale copy (checkpoint 2) while process 0 resumes checkpoint 4: both stop before training,
    naming both steps, instead of a draw mismatch that blames the config."""
    from tests.trl_integration.test_trl_process_failures import by_hand

    _, out = runs
    outputs = by_hand(chain_sum_server, tmp_path, "--eval-every", "0", "--resume", str(out["two"] / "checkpoint-4"),
                      "--resume-on-1", str(out["two"] / "checkpoint-2"))
    for output in outputs:
        assert "resumed different checkpoints (process 0: step 4" in output and "process 1: step 2" in output
        assert "differ between the training processes (process 0 has" not in output  # not the draws' mismatch
