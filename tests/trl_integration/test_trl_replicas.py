"""`Replicas` on one process, and the rule that keeps collectives off other threads (the processes' own runs are
test_trl_processes.py and test_trl_process_failures.py)."""

from __future__ import annotations

import threading

import pytest

from openenv_prime.trl.replicas import ProcessFailed, Replicas, bind_device


def test_on_one_process_an_exchange_is_local_and_a_failure_raises_the_error_itself():
    replicas = Replicas()
    assert replicas.exchange("counting", lambda: 3) == [3]
    assert replicas.collect("listing", lambda: [1, 2]) == [1, 2]
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
