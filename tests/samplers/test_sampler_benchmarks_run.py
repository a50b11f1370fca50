"""The benchmark scripts still run (tiny sizes; their numbers are read from the tables, not asserted)."""

import importlib.util
import pathlib
import sys

import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_simulator_prints_its_table(capsys):
    sim = _load("simulate_curriculum")
    assert sim.main(["--seeds", "2", "--families", "3", "--budget", "20000", "--tasks-per-family", "5"]) == 0
    out = capsys.readouterr().out
    for name in ("sequential (tier order)", "uniform", "curriculum", "predicted signal share", "curriculum / uniform"):
        assert name in out


def test_simulated_samplers_see_only_keys_rewards_and_costs():
    """No latent probability leaks: a sampler's view of a run is its draws and (key, rewards, costs)."""
    sim = _load("simulate_curriculum")
    world = sim.World(families=3, tasks_per_family=4, budget=4000)
    seen = []
    original = sim.CurriculumSampler.update

    def spy(self, key, rewards, costs=None):
        seen.append((key, rewards, costs))
        return original(self, key, rewards, costs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sim.CurriculumSampler, "update", spy)
        run = sim.simulate(world, "curriculum", seed=0)
    assert seen and all(set(r) <= {0.0, 1.0} and len(c) == len(r) == world.group_size for _, r, c in seen)
    assert 0.0 <= run.signal_share <= 1.0


def test_bench_samplers_measures_every_sampler():
    bench = _load("bench_samplers")
    bench.SIZES = (("K=3", 3, 2),)
    rows = bench.run(pairs=200, repeats=1)
    assert {name for _, name, _ in rows} >= set(bench.SAMPLERS)
    assert all(t > 0 for *_, t in rows)
