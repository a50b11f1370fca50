"""`Replicas` on one process, and the rule that keeps collectives off other threads (the processes' own runs are
test_trl_processes.py and test_trl_process_failures.py)."""

from __future__ import annotations

import threading

import pytest

from openenv_prime.trl.replicas import ProcessFailed, Replicas, bind_device


def test_on_one_process_an_exchange_is_local_and_a_failure_raises_the_error_itself():
    replicas = Replicas()
    assert replicas.exchange("counting", lambda: 3) == [3]
    assert replicas.from_main("making", lambda: "made") == "made"
    assert replicas.same("the draws", lambda: [4, 5]) == [4, 5]
    with pytest.raises(KeyError, match="gone"):
        replicas.exchange("looking up", lambda: {}["gone"])
    assert issubclass(ProcessFailed, RuntimeError)


def test_a_collective_on_another_thread_is_refused_until_that_thread_binds_the_device():
    """On GPUs a collective takes the calling thread's current device: a thread the package did not bind would
    use GPU 0 on every process. The refusal comes before any collective, so nothing waits on it."""
    import torch

    replicas = Replicas(0, 2)
    caught: list[BaseException] = []
    gathered: list[list] = []

    def off_thread(bind: bool) -> None:
        try:
            if bind:
                bind_device(torch.device("cpu"))
            gathered.append(replicas.gather(["x"]))
        except BaseException as err:  # noqa: BLE001 - the test reads it
            caught.append(err)

    worker = threading.Thread(target=off_thread, args=(False,), name="worker")
    worker.start()
    worker.join()
    assert isinstance(caught[0], RuntimeError)
    assert "thread 'worker', not the trainer's ('MainThread')" in str(caught[0]) and "bind_device" in str(caught[0])
    bound = threading.Thread(target=off_thread, args=(True,), name="bound")
    bound.start()
    bound.join()
    # past the thread rule: accelerate's gather, which with no process group here returns this process's items
    assert len(caught) == 1 and gathered == [["x"]]


class SecondProcess(Replicas):
    """Process 0 of 2 in this one process: every gather returns this process's items beside those ``other`` makes
    for process 1 from them (the same draws and digests; its own scored completions)."""

    def __init__(self, other):
        super().__init__(0, 2)
        self.other = other

    def gather(self, items: list) -> list:
        return [*items, *self.other(items)]


def test_the_error_streak_is_judged_on_the_gathered_batch_so_every_process_stops_at_the_same_call(chain_sum_server,
                                                                                                    tmp_path):
    """Process 0's own episodes were all scored; process 1's environment failed all 8 of its. Counted per process,
    process 1 would stop alone and leave process 0 waiting; counted on the gathered batch, process 0 stops too, at the
    same call, quoting the environment's error."""
    from openenv_prime.client.engine.failures import ERRORS_IN_A_ROW, EnvironmentFailing
    from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig
    from tests.trl_integration.tiny import grpo_args

    assert ERRORS_IN_A_ROW == 8
    openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=chain_sum_server, group_size=4))
    try:
        openenv.dataset(grpo_args(tmp_path, per_device_train_batch_size=16))  # 4 rows: 2 per process

        def process_1(items):
            status, value = items[0]
            if isinstance(value, list) and value and isinstance(value[0], tuple):  # its scored completions
                return [("ok", [(draw, None, 1.0, "error", "step 1 failed inside the environment: boom", 0)
                                for draw in (2, 2, 2, 2, 3, 3, 3, 3)])]
            return items  # the same draws and digests; the main process's prompts

        openenv.rows.replicas = SecondProcess(process_1)
        rows = openenv.rows.rows()
        mine = [next(rows), next(rows)]
        assert [row["draw"] for row in mine] == [0, 1]
        draws = [row["draw"] for row in mine for _ in range(4)]
        tasks = [row["task_index"] for row in mine for _ in range(4)]
        with pytest.raises(EnvironmentFailing, match="failed the last 8 episodes in a row.*boom"):
            openenv.reward(prompts=[None] * 8, completions=["0"] * 8, completion_ids=[[1]] * 8, draw=draws,
                           task_index=tasks)
        assert openenv.env.streak.count == 8 and openenv.env.streak.total == 8  # process 1's, none of its own
    finally:
        openenv.close()
