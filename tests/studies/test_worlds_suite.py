"""The one simulator (studies/worlds/): the suite and the tiers report run, runs are reproducible, worlds obey
their own rules, samplers see only (task, rewards), and screening rollouts are paid for. Numbers are read from
the tables, not asserted here: these check structure."""

import importlib
import random

import pytest


@pytest.fixture(scope="module")
def worlds():
    """The studies.worlds package, imported from the repository root."""
    names = ("suite", "tiers", "peers", "peers2025", "simulate", "worlds")
    return {name: importlib.import_module(f"studies.worlds.{name}") for name in names}


def test_quick_mode_prints_a_table_per_world_with_every_sampler(worlds, capsys):
    suite = worlds["suite"]
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
        for cell in row[1:-2]:  # wins out of 3 quick seeds: signal/area/mastery
            assert all(0 <= int(n) <= 3 for n in cell.split("/")) and cell.count("/") == 2
        ratio, best = row[-2].split("x (", 1)
        best = best.removesuffix(")")
        assert float(ratio) > 0 and best in suite.SAMPLERS and best not in suite.OURS
        assert row[-1] in ("yes", "no")
    assert f"`curriculum` meets the bar in {sum(row[-1] == 'yes' for row in rows)}/{len(rows)} worlds" in out


def test_the_tiers_report_prints_its_table_and_ratios(worlds, capsys):
    assert worlds["tiers"].main(["--seeds", "2", "--budget", "6000"]) == 0
    out = capsys.readouterr().out
    for name in ("sequential (tier order)", "uniform", "curriculum (binary, RFC)", "predicted signal share",
                 "curriculum / uniform"):
        assert name in out


def test_runs_are_reproducible_and_samplers_differ(worlds):
    suite = worlds["suite"]
    world = suite.WORLDS["late"]
    again = [suite.simulate(world, suite.SAMPLERS["curriculum"], 3, budget=3000) for _ in range(2)]
    assert again[0] == again[1]
    other = suite.simulate(world, suite.SAMPLERS["uniform"], 3, budget=3000)
    assert other != again[0]


@pytest.mark.parametrize("name", ["random", "graded", "coinflip", "ordered"])
def test_only_groups_whose_successes_differ_teach_and_only_learnable_families_learn(worlds, name):
    world = worlds["worlds"].WORLDS[name](seed=1)
    rng = random.Random(0)
    g = world.group_size
    members = world.layout.members
    for family, kind in enumerate(world.kinds):
        task = members[family][-1]
        assert world.layout.family_of[task] == family
        before = list(world.logits)
        for successes in (0, g):
            assert not world.teach(task, successes)
        assert world.logits == before
        taught = world.teach(task, g // 2)
        assert taught == (kind == "learn") and (world.logits != before) == taught
        rewards = world.rewards(task, world.task_p(task), g, rng)
        assert len(rewards) == g
    if name == "graded":  # partial credit and format noise never reach a success
        dead = members[world.kinds.index("dead")][0]
        for _ in range(50):
            rewards = world.rewards(dead, 0.0, g, rng)
            assert max(rewards) < world.success_reward and max(rewards) > min(rewards)
    if name == "ordered":  # a tier's tasks are alike; elsewhere tasks of a family differ
        assert len(set(world.task_offset)) == 1
    else:
        assert len(set(world.task_offset)) == len(world.task_offset)


def test_samplers_see_only_tasks_and_rewards(worlds):
    suite, peers = worlds["suite"], worlds["peers"]
    seen = []

    class Spy(peers.Uniform):
        def update(self, task, rewards):
            seen.append((task, tuple(rewards)))

    make = lambda layout, g, seed, success: Spy(layout, g, seed, success)  # noqa: E731
    run = suite.simulate(suite.WORLDS["late"], make, 0, budget=2000)
    assert seen and all(isinstance(t, int) and len(r) == 8 for t, r in seen)
    assert len(seen) < 2000 // 8  # late feedback: the last steps' groups have not arrived
    assert 0.0 <= run.signal <= 1.0 and run.predicted is None


def test_the_package_samplers_hear_each_group_as_its_task_with_g_binary_rewards(worlds):
    suite = worlds["suite"]
    from openenv_prime.samplers import CurriculumSampler, Task

    seen = []
    original = CurriculumSampler.update

    def spy(self, key, rewards, costs=None):
        seen.append((key, tuple(rewards)))
        return original(self, key, rewards, costs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(CurriculumSampler, "update", spy)
        suite.simulate(suite.WORLDS["ordered"], suite.SAMPLERS["curriculum"], 0, budget=4000)
    assert seen and all(isinstance(t, Task) and set(r) <= {0.0, 1.0} and len(r) == 8 for t, r in seen)


def test_speed_rl_pays_for_its_screening_rollouts(worlds):
    """Every rollout is an episode of the budget: 8 per trained group, 4 per prompt screened out."""
    suite, peers2025 = worlds["suite"], worlds["peers2025"]
    screens, trained = [], []

    class Counted(peers2025.SPEEDRL):
        def sample(self, n):
            rollout = self.rollout

            def counted(task, k):
                screens.append(k)
                return rollout(task, k)

            self.rollout = counted
            try:
                kept = super().sample(n)
            finally:
                self.rollout = rollout
            trained.extend(kept)
            return kept

    run = suite.simulate(suite.WORLDS["random"], lambda *a: Counted(*a), 2, budget=3000)
    assert screens and set(screens) == {4} and all(len(prefix) == 4 for _, prefix in trained)
    rejected = len(screens) - len(trained)
    assert rejected > 0
    assert run.episodes == 4 * rejected + 8 * len(trained)
