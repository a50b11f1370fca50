"""The benchmark scripts still run (tiny sizes; their numbers are read from the tables, not asserted)."""

from benchmarks.samplers import call_cost


def test_call_cost_benchmark_measures_every_sampler(monkeypatch):
    monkeypatch.setattr(call_cost, "SIZES", (("K=3", 3, 2),))
    rows = call_cost.run(pairs=200, repeats=1)
    assert {name for _, name, _ in rows} >= set(call_cost.SAMPLERS)
    assert all(t > 0 for *_, t in rows)
