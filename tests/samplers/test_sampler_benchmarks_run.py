"""The benchmark scripts still run (tiny sizes; their numbers are read from the tables, not asserted)."""

import importlib.util
import pathlib
import sys

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_bench_samplers_measures_every_sampler():
    bench = _load("bench_samplers")
    bench.SIZES = (("K=3", 3, 2),)
    rows = bench.run(pairs=200, repeats=1)
    assert {name for _, name, _ in rows} >= set(bench.SAMPLERS)
    assert all(t > 0 for *_, t in rows)
