"""Calibration from run logs (studies/worlds/calibration.py) measures what it claims, and the calibrated world
reproduces what real runs gave: GRESO ahead of the frontier rule, both ahead of uniform, and a family's signal running
out as it is trained on."""

import json
import random

import pytest

from studies.worlds import calibration, suite
from studies.worlds.simulate import simulate
from studies.worlds.worlds import WORLDS


def _write_run(path, families, steps=40, groups_per_step=6, g=8, seed=0):
    """A run log whose groups come from known per-task success rates: family -> function(rng) -> task p."""
    rng = random.Random(seed)
    path.mkdir(parents=True)
    lines = []
    for step in range(1, steps + 1):
        groups = []
        for _ in range(groups_per_step):
            key = rng.choice(sorted(families))
            p = families[key](rng)
            groups.append({"key": key, "index": 0, "rewards": [float(rng.random() < p) for _ in range(g)]})
        lines.append({"type": "step", "step": step, "groups": len(groups), "group_rewards": groups,
                      "groups_with_signal": sum(len(set(x["rewards"])) > 1 for x in groups), "sampler": {}})
    (path / "log.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return lines


def test_homogeneous_tasks_match_the_binomial_and_spread_tasks_are_over_predicted(tmp_path):
    _write_run(tmp_path / "run", {
        "same": lambda rng: 0.3,  # every task at p = 0.3: rho 0
        "split": lambda rng: 0.9 if rng.random() < 0.3 else 0.02,  # mean p 0.28, tasks nearly always or never solved
        "dead": lambda rng: 0.0,
    }, steps=200)
    result = calibration.calibrate([tmp_path / "run"])
    same, split, dead = result["same"], result["split"], result["dead"]
    assert same["rho"] < 0.05 and 0.9 < same["binomial"] / same["observed"] < 1.1
    assert split["rho"] > 0.5 and split["binomial"] / split["observed"] > 1.5
    assert split["no_success_observed"] > 2 * split["no_success_binomial"]
    assert dead["observed"] == 0.0 and dead["first_signal"] == [None] and dead["longest_without"] == [dead["groups"]]
    table = calibration.table(result)
    assert "| dead | 1 |" in table and "never in 1 of 1" in table


def test_cumulative_metrics_give_the_same_shares_and_stretches(tmp_path):
    lines = _write_run(tmp_path / "run", {"a": lambda rng: 0.5, "b": lambda rng: 0.0}, steps=30)
    seen: dict[str, list[int]] = {}
    metrics = []
    for line in lines:  # as a sampler's metrics() would report them: cumulative per key
        for x in line["group_rewards"]:
            counts = seen.setdefault(x["key"], [0, 0])
            counts[0] += 1
            counts[1] += len(set(x["rewards"])) > 1
        prefix = "curriculum/env/sampler/"  # as prime-rl's orchestrator names the adapter's metrics
        metrics.append({**{f"{prefix}key/{k}/episodes": 8.0 * n for k, (n, _) in seen.items()},
                        **{f"{prefix}key/{k}/observed_signal": s / n for k, (n, s) in seen.items()}})
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    per_group = calibration.calibrate([tmp_path / "run"])
    cumulative = calibration.calibrate([tmp_path / "metrics.jsonl"])
    for key in ("a", "b"):
        assert cumulative[key]["groups"] == per_group[key]["groups"]
        assert cumulative[key]["observed"] == pytest.approx(per_group[key]["observed"])
        assert cumulative[key]["rho"] is None  # no per-group rewards there
    assert cumulative["b"]["first_signal"] == per_group["b"]["first_signal"] == [None]


def test_the_cli_names_a_path_without_a_run_log(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        calibration.main([str(tmp_path / "nothing")])
    assert exit_.value.code == 2
    assert "no run log at" in capsys.readouterr().err


def test_the_calibrated_world_reproduces_the_real_runs_ordering():
    """Real runs (docs/mlx.md): GRESO per family drew more groups with signal than the frontier rule, which drew more
    than uniform. A world that did not reproduce that could not be used to choose a default."""
    world = WORLDS["calibrated"]
    seeds = range(60)
    runs = {name: [simulate(world, suite.SAMPLERS[name], s) for s in seeds]
            for name in ("curriculum", "GRESO (families)", "uniform")}  # the default: frontier
    frontier, greso, uniform = runs.values()
    assert sum(g.signal > f.signal for g, f in zip(greso, frontier)) > 40
    assert sum(f.signal > u.signal for f, u in zip(frontier, uniform)) > 50


def test_signal_by_own_draws_falls_for_a_family_that_is_learned_and_not_for_one_that_is_not(tmp_path):
    drawn = {"learned": 0}

    def learned(rng):  # p rises with each group of the family: its tasks become always solved
        drawn["learned"] += 1
        return min(1.0, 0.4 + 0.03 * drawn["learned"])

    _write_run(tmp_path / "run", {"learned": learned, "flat": lambda rng: 0.5}, steps=30)
    result = calibration.calibrate([tmp_path / "run"])
    learned_bins, flat_bins = result["learned"]["by_own_draws"], result["flat"]["by_own_draws"]
    assert [n for n, _ in learned_bins][:4] == [10, 10, 10, 10]  # each run's groups of a family, in order, by tens
    assert sum(n for n, _ in learned_bins) == result["learned"]["groups"]
    share = [s / n for n, s in learned_bins]
    assert share[0] > 0.8 and share[-1] < 0.2  # p 0.43-0.7 at first, 1.0 from the 20th group
    assert all(s / n >= 0.8 for n, s in flat_bins)  # p 0.5 all along: 99% of groups differ
    assert "signal by own groups (1-10 / 11-20 / 21-30 / 31-40 / 41+)" in calibration.table(result)


def test_the_calibrated_world_runs_a_family_out_of_signal_as_the_real_runs_do():
    """Real runs (docs/samplers.md): products/0 gave signal on 0.73 of its first 10 groups and 0.41 of its 31st-40th;
    measured on the simulator with the same estimator, over the same four samplers' runs."""
    samplers = ["curriculum calibrated (before)", "curriculum", "GRESO (families)", "uniform"]  # the default: frontier
    result = calibration.calibrate_runs(calibration.simulated_runs("calibrated", samplers, range(15)))
    assert set(result) == {f"{d}/{t}" for d in ("products", "chain_sum", "basic_arithmetic") for t in range(3)}
    products = [s / n for n, s in result["products/0"]["by_own_draws"][:4]]
    assert products[0] - products[3] > 0.1
    assert all(result[f"{d}/{t}"]["observed"] == 0.0 for d in ("products", "chain_sum") for t in (1, 2))


def test_the_cli_measures_a_simulated_world_and_names_a_bad_world_or_sampler(capsys):
    assert calibration.main(["--simulate", "calibrated", "--samplers", "uniform", "--seeds", "2"]) == 0
    out = capsys.readouterr().out
    assert "| products/0 | 2 |" in out and "| basic_arithmetic/2 | 2 |" in out  # every family, over 2 runs
    for argv, message in ((["--simulate", "nowhere"], "no such world"),
                          (["--simulate", "calibrated", "--samplers", "nobody"], "unknown 'nobody'"),
                          (["--simulate", "calibrated", "--seeds", "0"], "at least 1"),
                          ([], "or --simulate WORLD")):
        with pytest.raises(SystemExit) as exit_:
            calibration.main(argv)
        assert exit_.value.code == 2 and message in capsys.readouterr().err
