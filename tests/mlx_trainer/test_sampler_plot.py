"""The sampler panel and the end-of-run summary, from logs in the trainer's format."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_prime.mlx_trainer.report import (build_sampler_figure, eval_headline, load_run, load_steps, plot_run,
                                             summarize)


def write_log(run: Path, draws_per_step: list[dict[str, int]], *, with_p: bool = True, evals: bool = True) -> Path:
    """Step lines whose cumulative per-key episode counts follow `draws_per_step`; family "0" pays 0.5."""
    run.mkdir(parents=True)
    lines, total = [], {}
    if evals:
        lines.append({"type": "eval", "step": 0, "episodes": 0, "tokens": 0, "accuracy": {"0": 0.25, "1": 0.0},
                      "overall": 0.125, "n": {"0": 4, "1": 4}})
    for step, draws in enumerate(draws_per_step, 1):
        for f, n in draws.items():
            total[f] = total.get(f, 0) + n
        metrics = {"episodes": float(sum(total.values()))}
        for f in ("0", "1"):
            metrics[f"key/{f}/episodes"] = float(total.get(f, 0))
            if with_p:
                metrics[f"key/{f}/p"] = 0.5 + 0.04 * step if f == "0" else 0.5 - 0.04 * step
        fam = {f: (0.5 if f == "0" else 0.0) for f, n in draws.items() if n}
        groups = sum(draws.values()) // 4
        lines.append({"type": "step", "step": step, "episodes": 0, "tokens": 0,
                      "reward": sum(fam.get(f, 0) * n for f, n in draws.items()) / sum(draws.values()),
                      "family_reward": fam, "groups": groups, "groups_with_signal": draws.get("0", 0) // 4,
                      "sampler": metrics, "seconds": {}, "loss": 0.0})
    if evals:
        lines.append({"type": "eval", "step": len(draws_per_step), "episodes": 0, "tokens": 0,
                      "accuracy": {"0": 0.75, "1": 0.0}, "overall": 0.375, "n": {"0": 4, "1": 4}})
    (run / "log.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
    return run


MOVING = [{"0": 8, "1": 8}] * 2 + [{"0": 12, "1": 4}] * 2 + [{"0": 16, "1": 0}] * 4


def test_draws_per_step_are_the_differences_of_the_sampler_counts(tmp_path):
    steps = load_steps(write_log(tmp_path / "run", MOVING))
    assert steps.steps == list(range(1, 9))
    assert steps.draws == {"0": [d["0"] for d in MOVING], "1": [d["1"] for d in MOVING]}
    assert steps.p_source == "sampler" and steps.p["0"][-1] > steps.p["0"][0]


def test_a_family_name_with_a_slash_stays_one_family(tmp_path):
    """reasoning-gym's families are "dataset/tier": the sampler's keys "key/products/0/episodes" name "products/0"."""
    run = write_log(tmp_path / "run", MOVING)
    text = (run / "log.jsonl").read_text().replace('"key/0/', '"key/products/0/').replace('"key/1/', '"key/products/1/')
    (run / "log.jsonl").write_text(text.replace('"0": 0.5', '"products/0": 0.5').replace('"1": 0.0', '"products/1": 0.0'))
    steps = load_steps(run)
    assert list(steps.draws) == ["products/0", "products/1"]
    assert steps.draws["products/0"] == [d["0"] for d in MOVING]


def test_without_a_sampler_p_the_observed_success_rate_is_used(tmp_path):
    steps = load_steps(write_log(tmp_path / "run", MOVING, with_p=False))
    assert steps.p_source == "observed"
    assert steps.p["0"] == [0.5] * 8 and steps.p["1"][:4] == [0.0] * 4


def test_summary_says_what_moved(tmp_path):
    text = summarize(write_log(tmp_path / "run", MOVING))
    assert "draws per family:    0 50%->100%, 1 50%->0%" in text
    assert "estimated p per family: 0 0.54->0.82, 1 0.46->0.18" in text
    assert "sampled reward:      0.25 -> 0.50" in text
    assert "greedy eval (step 0 -> 8): 0 0.25->0.75" in text
    assert "\n  test-split eval, step 0 -> 8: family 0 0.25 -> 0.75 (+0.50, 4 tasks) (best of 2 families)" in text


def test_the_eval_headline_is_the_family_that_rose_most_with_its_test_set_size(tmp_path):
    run = write_log(tmp_path / "run", MOVING)
    lines = (run / "log.jsonl").read_text().splitlines()
    last = json.loads(lines[-1])
    last["accuracy"] = {"0": 0.0, "1": 0.25}  # family 0 fell, family 1 rose by one task of four
    (run / "log.jsonl").write_text("\n".join(lines[:-1] + [json.dumps(last)]) + "\n")
    headline = eval_headline(load_run(run))
    assert headline == "test-split eval, step 0 -> 8: family 1 0.00 -> 0.25 (+0.25, 4 tasks) (best of 2 families)"
    figure = build_sampler_figure(load_steps(run), load_run(run))
    assert headline in figure._suptitle.get_text()  # the panel says it in its title
    assert summarize(run).count("test-split eval") == 1


def test_no_headline_before_a_second_eval(tmp_path):
    run = write_log(tmp_path / "run", MOVING)
    lines = (run / "log.jsonl").read_text().splitlines()
    (run / "log.jsonl").write_text("\n".join(lines[:-1]) + "\n")  # only the step-0 eval
    assert eval_headline(load_run(run)) is None
    assert "test-split eval" not in summarize(run)


def test_panel_pngs_are_written(tmp_path):
    cur = write_log(tmp_path / "seed0" / "curriculum", MOVING)
    uni = write_log(tmp_path / "seed0" / "uniform", [{"0": 8, "1": 8}] * 8, with_p=False, evals=False)
    assert [p.name for p in plot_run(cur)] == ["accuracy.png", "curriculum.png"]
    assert [p.name for p in plot_run(uni)] == ["curriculum.png"]  # no evals: the panel still draws
    assert all(p.stat().st_size > 10_000 for run in (cur, uni) for p in (run / "plots").iterdir())


@given(st.lists(st.fixed_dictionaries({"0": st.integers(0, 16), "1": st.integers(0, 16)})
                .filter(lambda d: d["0"] + d["1"] > 0), min_size=1, max_size=12))
@settings(max_examples=40, deadline=None)
def test_draw_counts_round_trip_for_any_history(tmp_path_factory, history):
    run = write_log(tmp_path_factory.mktemp("h") / "run", history, evals=False)
    steps = load_steps(run)
    assert [steps.draws["0"][i] + steps.draws["1"][i] for i in range(len(history))] == [d["0"] + d["1"] for d in history]
