"""The state-size benchmark still runs and its v1 column is what version 1 stored (tiny pools; numbers are not asserted)."""

import json

from benchmarks.samplers import saved_state


def test_saved_state_benchmark_prints_its_table(capsys, monkeypatch):
    monkeypatch.setattr(saved_state, "POOLS", (("40 tasks / 4 keys", 40, 4), ("40 tasks / 40 keys", 40, 40)))
    assert saved_state.main(["--pairs", "50"]) == 0
    out = capsys.readouterr().out
    assert "40 tasks / 4 keys" in out and "v1 for the same state" in out


def test_the_v1_size_counts_every_task_of_every_order():
    m = saved_state.measure(tasks=400, keys=2, pairs=30)
    assert m["v1_bytes"] - m["bytes"] > len(json.dumps(list(range(400))))  # v1 listed every task in its key's order
    assert m["cycles_bytes"] < 100  # v2: two keys, at most two [slot, seed, position] entries
