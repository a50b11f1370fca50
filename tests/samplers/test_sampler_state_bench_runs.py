"""The state-size benchmark still runs and its v1 column is what version 1 stored (tiny pools; numbers are not asserted)."""

import importlib.util
import json
import pathlib
import sys

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def test_bench_sampler_state_prints_its_table(capsys):
    bench = _load("bench_sampler_state")
    bench.POOLS = (("40 tasks / 4 keys", 40, 4), ("40 tasks / 40 keys", 40, 40))
    assert bench.main(["--pairs", "50"]) == 0
    out = capsys.readouterr().out
    assert "40 tasks / 4 keys" in out and "v1 for the same state" in out


def test_the_v1_size_counts_every_task_of_every_order():
    bench = _load("bench_sampler_state")
    m = bench.measure(tasks=400, keys=2, pairs=30)
    assert m["v1_bytes"] - m["bytes"] > len(json.dumps(list(range(400))))  # v1 listed every task in its key's order
    assert m["cycles_bytes"] < 100  # v2: two keys, at most two [slot, seed, position] entries
