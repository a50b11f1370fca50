"""The world/peer suite (benchmarks/worlds/) runs, is reproducible, and its worlds obey their own rules.
Numbers are read from the tables, not asserted here: these check structure."""

import importlib
import importlib.util
import pathlib
import random

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _suite():
    spec = importlib.util.spec_from_file_location("curriculum_suite", ROOT / "benchmarks" / "curriculum_suite.py")
    spec.loader.exec_module(importlib.util.module_from_spec(spec))  # puts the repository root on sys.path
    return importlib.import_module("benchmarks.worlds.suite")



def test_quick_mode_prints_a_table_per_world_with_every_sampler(capsys):
    suite = _suite()
    assert suite.main(["--quick"]) == 0
    out = capsys.readouterr().out
    chunks = out.split("### ")[1:]
    tables = [chunk for chunk in chunks if chunk.startswith("world ")]
    assert [t.split("`")[1] for t in tables] == list(suite.WORLDS)
    for table in tables:
        rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| sampler")]
        assert [row.split(" | ")[0][2:] for row in rows] == list(suite.SAMPLERS)
        for row in rows:
            cells = row.strip("| ").split(" | ")
            for cell in (cells[1], cells[2], cells[4], cells[5]):  # signal, area, wasted, on p>=0.9: shares
                median, low, high = (float(x.strip("[],")) for x in cell.split()[:3])
                assert 0.0 <= low <= median <= high <= 1.0
        oracle = next(r for r in rows if r.startswith("| oracle"))
        assert oracle.split(" | ")[4].startswith("0.000")  # the oracle never draws an unlearnable family
        assert "verdict: `curriculum`" in table
    summary = chunks[-1]
    assert summary.startswith("summary")
    rows = [line.strip("| ").split(" | ") for line in summary.splitlines() if line.startswith("| ") and "world" not in line]
    assert [row[0] for row in rows] == list(suite.WORLDS)
    for row in rows:
        for cell in row[1:-1]:  # wins out of 3 quick seeds: signal/area/mastery
            assert all(0 <= int(n) <= 3 for n in cell.split("/")) and cell.count("/") == 2
        assert row[-1] in ("yes", "no")
    assert f"`curriculum` meets the bar in {sum(row[-1] == 'yes' for row in rows)}/{len(rows)} worlds" in out


def test_runs_are_reproducible_and_samplers_differ():
    suite = _suite()
    world = suite.WORLDS["late"]
    again = [suite.simulate(world, suite.SAMPLERS["curriculum"], 3, budget=3000) for _ in range(2)]
    assert again[0] == again[1]
    other = suite.simulate(world, suite.SAMPLERS["uniform"], 3, budget=3000)
    assert other != again[0]


@pytest.mark.parametrize("name", ["random", "graded", "coinflip", "ordered"])
def test_only_groups_whose_successes_differ_teach_and_only_learnable_families_learn(name):
    suite = _suite()
    world = suite.WORLDS[name](seed=1)
    rng = random.Random(0)
    g = world.group_size
    for family, kind in enumerate(world.kinds):
        before = list(world.logits)
        for successes in (0, g):
            assert not world.teach(family, successes)
        assert world.logits == before
        taught = world.teach(family, g // 2)
        assert taught == (kind == "learn") and (world.logits != before) == taught
        rewards, successes = world.rewards(family, world.probs()[family], rng)
        assert len(rewards) == g and successes == sum(r >= world.success_reward for r in rewards)
    if name == "graded":  # partial credit and format noise never reach a success
        dead = world.kinds.index("dead")
        for _ in range(50):
            rewards, successes = world.rewards(dead, 0.0, rng)
            assert successes == 0 and max(rewards) < world.success_reward and max(rewards) > min(rewards)


def test_peers_see_only_families_and_rewards():
    suite = _suite()
    peers = importlib.import_module("benchmarks.worlds.peers")
    seen = []

    class Spy(peers.Uniform):
        def update(self, family, rewards):
            seen.append((family, tuple(rewards)))

    run = suite.simulate(suite.WORLDS["late"], lambda k, g, seed, success: Spy(k, g, seed, success), 0, budget=2000)
    assert seen and all(isinstance(f, int) and len(r) == 8 for f, r in seen)
    assert len(seen) < 2000 // 8  # late feedback: the last steps' groups have not arrived
    assert 0.0 <= run.signal <= 1.0 and run.predicted is None
