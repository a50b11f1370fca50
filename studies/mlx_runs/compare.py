"""The package default vs uniform vs the strongest 2025 peer (GRESO per family), and the package's other rules
(`frontier`, `calibrated`, `reach`, pinned) where asked, in real SmolLM2 training runs, judged on held-out questions:
reasoning-gym datasets in tiers on one local server, whose `heldout` split asks questions no train task of their
family asks; per seed one run of each sampler, interleaved (seed 0: curriculum, uniform, peer; seed 1:
...), so the machine's load hits them alike. Reports greedy held-out accuracy per family at step 0 and at the end with
its noise (binomial standard error, seed-to-seed spread), sampled reward and groups with signal per quarter of the
run, medians and per-seed wins, and one plot with the samplers overlaid. Then RFC 013's two readings of held-out
accuracy over all families (`readings`, `--window`): per episode, the mean of the evals in the last half of the steps;
per generated token, each run's accuracy against its cumulative generated tokens (the eval records' `tokens`), read by
linear interpolation over the last half of the fewest tokens any finished run generated; per seed, medians and the
paired sign test of the first sampler against each other, and a second plot, compare-tokens.png (accuracy against
generated tokens, the median over seeds with their range shaded).

RFC 013's reference experiment at this machine's scale (docs/mlx.md, its plan written before the runs) is
`--samplers curriculum uniform --seeds 0 1 2 3 4 5 6 7 --datasets letter_counting,number_sequence,products,aiw --tiers 2
--heldout-size 25 --steps 20 --eval-every 4 --out runs/rfc-reference`.

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python -m studies.mlx_runs.compare --seeds 0 1 2 3 --out runs/compare

The 9-family comparison of docs/mlx.md (its plan written before the runs) is `--samplers curriculum frontier greso
uniform --datasets products,basic_arithmetic,chain_sum --tiers 3 --steps 32 --eval-every 32 --seeds 0 ... 9
--out runs/compare-9`. The defaults are the earlier run docs/mlx.md reports: the default run's 16 steps and settings on
products and basic_arithmetic in tiers 0 and 1 (tier 1 starts at 0 held-out accuracy, so the samplers have families of
different difficulty to choose between), 40 train tasks and 32 held-out questions per family, evals at steps 0 and
16; 12 runs took about an hour on the shared 2-core machine.

Each (sampler, seed) trains in its own process into OUT/seedN/SAMPLER/ (config beside it, OUT/seedN/SAMPLER.json); a
finished run is skipped and a started one resumes from its checkpoint, so a killed compare continues where it stopped.
The untrained model's step-0 eval (greedy, so the same in every run) is made by the first run only and shared by the
report; runs whose step-0 evals differ are refused as not one comparison.
--report-only prints the tables and draws the plot from what is there. --model tiny is the smoke path (a random tiny
model, seconds). The peer comes from studies/worlds/peer_sampler.py (the simulator's own rule behind the sampler interface).
The runs are read back by studies/run_dirs.py.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from studies.run_dirs import baseline_eval, finished, load_runs

# The package's samplers by the name a run directory takes: (sampler name, kwargs). "curriculum" is whatever the
# package's default is when the comparison runs (signal="calibrated" in the runs of 2026-12-04 and 05, frontier
# since); "frontier" and "calibrated" pin those rules, "reach" the calibrated rule with tiers out of reach dropped to
# the floor (docs/mlx.md).
PACKAGE_SAMPLERS = {"curriculum": ("curriculum", {}), "frontier": ("curriculum", {"signal": "frontier"}),
                    "calibrated": ("curriculum", {"signal": "calibrated"}), "reach": ("curriculum", {"signal": "reach"}),
                    "uniform": ("uniform", {})}
PEER = "greso"  # the strongest 2025 peer (docs/mlx.md says why); --samplers takes another of peer_sampler.PEERS
REACH = 0.1  # a family is "in reach" when some eval of some run answers at least this share of it

# The settings of the embedded default run (openenv_prime/mlx_trainer/default.toml when this was measured), pinned here
# so that a change of the default does not change what this table measures.
SMOLLM2 = {
    "model": {"path": "smollm2-135m"},
    "lora": {"rank": 8, "scale": 20.0, "layers": 8, "dropout": 0.0},
    "grpo": {"group_size": 8, "tasks_per_step": 4, "max_new_tokens": 8, "temperature": 1.0, "learning_rate": 1e-4,
             "lr_schedule": "cosine", "min_lr_ratio": 0.1, "clip": 0.2, "kl_beta": 0.0, "updates_per_step": 1,
             "system_prompt": "Reply with only the final number."},
}
TINY = {  # the smoke path: a random dim-64 model that learns nothing here, but runs every part in seconds
    "lora": {"rank": 8, "scale": 20.0, "layers": -1, "dropout": 0.0},
    "grpo": {"group_size": 4, "tasks_per_step": 2, "max_new_tokens": 3, "learning_rate": 3e-4, "system_prompt": ""},
}


def run_config(args, sampler: str, seed: int, model: str) -> dict:
    """The trainer config (as a dict for `config_from_dict`) of one run; the server's URL is added at launch."""
    settings = json.loads(json.dumps(SMOLLM2 if args.model == "smollm2" else TINY))
    settings.setdefault("model", {})["path"] = model
    settings["grpo"].update({k: v for k, v in (("tasks_per_step", args.tasks_per_step), ("group_size", args.group_size),
                                               ("max_new_tokens", args.max_tokens),
                                               ("learning_rate", args.learning_rate)) if v is not None})
    tokens = settings["grpo"]["max_new_tokens"]
    return {
        **settings, "seed": seed, "steps": args.steps, "plot": False,
        "sampler": dict(zip(("name", "kwargs"), PACKAGE_SAMPLERS.get(sampler, ("uniform", {})))),  # a peer wraps this pool
        "environment": {"train_split": "train", "test_split": "heldout", "family_field": "family", "max_sessions": 64,
                        "embedded": "reasoning-gym", "datasets": args.datasets, "tiers": args.tiers},
        "eval": {"every": args.eval_every, "tasks_per_family": args.heldout_size, "max_new_tokens": tokens},
        "checkpoint": {"every": 1, "keep": 2},
    }


def compare(args) -> None:
    """Every seed's runs in turn (interleaved samplers), each in its own process, on one shared server."""
    from openenv_prime.envs.launch import local_server

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model = "smollm2-135m"
    if args.model == "tiny":  # built once, so that a resumed compare trains the same model
        from openenv_prime.mlx_trainer.model.sources import build_tiny_model

        if not (out / "tiny" / "config.json").is_file():
            build_tiny_model(out / "tiny")
        model = str(out / "tiny")
    names = {s: run_name(s, args.learning_rate) for s in args.samplers}
    todo = [(seed, s) for seed in args.seeds for s in args.samplers if not finished(out / f"seed{seed}" / names[s])]
    if todo:
        sizes = ["--train-size", str(args.train_size), "--heldout-size", str(args.heldout_size)]
        with local_server("reasoning-gym", datasets=args.datasets, tiers=args.tiers, max_sessions=64,
                          extra_args=sizes) as url:
            for seed, sampler in todo:
                run = out / f"seed{seed}" / names[sampler]
                spec = spec_path(run)
                if run.is_dir() and spec.is_file():  # started: resume under the config it started with
                    config = json.loads(spec.read_text())["config"]
                else:  # step 0 is the untrained model's greedy eval, the same in every run: made once per comparison
                    config = run_config(args, sampler, seed, model)
                    config["eval"]["first"] = baseline_eval(out) is None
                run_one(run, config, sampler, url)
    report(out, list(names.values()), args.window)


def run_name(sampler: str, learning_rate: float | None) -> str:
    """A run's directory name: the sampler's, with ``-lr<LR>`` where the learning rate is not the pinned one."""
    return sampler if learning_rate is None else f"{sampler}-lr{learning_rate:g}"


def spec_path(run: Path) -> Path:
    """OUT/seedN/NAME.json beside the run directory (a name may hold dots: reach-lr5e-05, uniform-lr0.0005)."""
    return run.parent / f"{run.name}.json"


def run_one(run: Path, config: dict, sampler: str, url: str) -> None:
    """Train (or resume) one run in a child process; add its wall and CPU time and the load average to bench.json."""
    spec = spec_path(run)
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(json.dumps({"sampler": sampler, "peer": None if sampler in PACKAGE_SAMPLERS else sampler,
                                "config": config}, indent=1))
    load, started, cpu = os.getloadavg()[0], time.perf_counter(), _children_cpu()
    print(f"{run}: training ({sampler}, seed {config['seed']}, {config['steps']} steps), load {load:.1f}", flush=True)
    done = subprocess.run([sys.executable, "-m", __spec__.name, "--train-one", str(spec), "--run", str(run), "--url", url])
    if done.returncode != 0:
        raise SystemExit(f"{run}: the training process exited with status {done.returncode}; run the same command "
                         "again to resume it")
    wall, cpu = time.perf_counter() - started, _children_cpu() - cpu
    bench = run / "bench.json"
    parts = json.loads(bench.read_text())["parts"] if bench.is_file() else []
    parts.append({"wall_s": wall, "cpu_s": cpu, "load_start": load, "load_end": os.getloadavg()[0]})
    bench.write_text(json.dumps({"sampler": sampler, "parts": parts}, indent=1))
    print(f"{run}: done in {wall:.0f} s ({cpu:.0f} s CPU), load {load:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)


def train_one(spec_path: str, run: str, url: str) -> None:
    """The child: one run, resumed when it has a checkpoint; a peer wraps the pool of the stand-in sampler."""
    from openenv_prime.mlx_trainer.config import config_from_dict
    from openenv_prime.mlx_trainer.training.loop import train

    spec = json.loads(Path(spec_path).read_text())
    data = spec["config"]
    data["environment"]["base_url"] = url
    config = config_from_dict(data)
    wrapper = None
    if spec["peer"]:
        from studies.worlds.peer_sampler import make_peer_sampler

        def wrapper(stand_in):
            return make_peer_sampler(spec["peer"], stand_in.pool, seed=config.seed, group_size=config.grpo.group_size)
    try:
        train(config, Path(run), resume=True, progress=False, sampler_wrapper=wrapper)
    except Exception as error:  # the trainer's message says what happened and what was saved
        raise SystemExit(f"{run}: {error}") from None


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# -- the report ----------------------------------------------------------------------------------------------------


def families_in_reach(runs: dict[str, dict[int, dict]]) -> list[str]:
    """The families some eval of some run answers at least REACH of, in the report's order (tier, then name)."""
    reached = {f for by in runs.values() for r in by.values() for e in r["evals"]
               for f, accuracy in e["accuracy"].items() if accuracy >= REACH}
    return sorted(reached, key=lambda f: (f.split("/")[-1], f))


def quarters(values: list[float]) -> list[list[float]]:
    n = len(values)
    return [values[i * n // 4:(i + 1) * n // 4] for i in range(4)]


def summarize(run: dict) -> dict:
    steps, evals = run["steps"], run["evals"]
    rewards = [s["reward"] for s in steps]
    signal = [s["groups_with_signal"] for s in steps]
    groups = [s["groups"] for s in steps]
    first, last = evals[0], evals[-1]
    return {
        "steps": len(steps), "finished": run["finished"],
        "reward_q": [statistics.mean(q) if q else math.nan for q in quarters(rewards)],
        "reward": statistics.mean(rewards),
        "signal_q": [sum(q) for q in quarters(signal)], "groups_q": [sum(q) for q in quarters(groups)],
        "signal": sum(signal), "groups": sum(groups),
        "signal_per_episode": sum(signal) / steps[-1]["episodes"] if steps[-1].get("episodes") else math.nan,
        "first": first, "last": last,
        "all_first": statistics.mean(first["accuracy"].values()), "all_last": statistics.mean(last["accuracy"].values()),
        "step_s": statistics.median(sum(s["seconds"].values()) for s in steps),
        "wall_s": sum(p["wall_s"] for p in run["bench"]), "cpu_s": sum(p["cpu_s"] for p in run["bench"]),
        "load": [p["load_start"] for p in run["bench"]] + [p["load_end"] for p in run["bench"]],
    }


def draw_shares(run: dict, families: list[str]) -> list[float]:
    """Per step, the share of all episodes so far that went to ``families`` (from the sampler's cumulative counts)."""
    out = []
    for s in run["steps"]:
        episodes = {k.split("/")[1] + "/" + k.split("/")[2]: v for k, v in s["sampler"].items()
                    if k.startswith("key/") and k.endswith("/episodes")}
        total = sum(episodes.values())
        out.append(sum(episodes.get(f, 0.0) for f in families) / total if total else math.nan)
    return out


def se(p: float, n: int) -> float:
    """Binomial standard error of an accuracy p measured on n questions."""
    return math.sqrt(p * (1 - p) / n) if n else math.nan


def report(out: Path, samplers: list[str], window: float = 0.5) -> None:
    runs = load_runs(out, samplers)
    if not runs:
        raise SystemExit(f"{out}: no runs with a step and an eval yet")
    rows = {s: {seed: summarize(r) for seed, r in sorted(by_seed.items())} for s, by_seed in runs.items()}
    any_row = next(iter(next(iter(rows.values())).values()))
    families = sorted(any_row["first"]["accuracy"], key=lambda f: (f.split("/")[-1], f))
    n = any_row["first"]["n"]
    reach = families_in_reach(runs)
    print(f"\n{len(families)} families, held-out questions per family: "
          f"{', '.join(f'{f} {n[f]}' for f in families)}; in reach (held-out accuracy >= {REACH} at some eval): "
          f"{', '.join(reach) or 'none'}")

    print("\nPer run: held-out greedy accuracy, step 0 -> last eval, per family; sampled reward and groups with signal by "
          "quarter of the run; episodes on the families in reach; time")
    print(f"\n| sampler | seed | {' | '.join(families)} | all | sampled reward by quarter | groups with signal by quarter "
          f"| episodes in reach | s/step | wall s (CPU s) | load |")
    print("|---|---|" + "---|" * (len(families) + 7))
    for sampler, by_seed in rows.items():
        for seed, r in by_seed.items():
            acc = " | ".join(f"{r['first']['accuracy'][f]:.2f} -> {r['last']['accuracy'][f]:.2f}" for f in families)
            part = "" if r["finished"] else f" (unfinished: {r['steps']} steps)"
            share = draw_shares(runs[sampler][seed], reach)[-1]
            load = f"{min(r['load']):.1f}-{max(r['load']):.1f}" if r["load"] else ""
            print(f"| {sampler} | {seed}{part} | {acc} | {r['all_first']:.2f} -> {r['all_last']:.2f} | "
                  f"{' / '.join(f'{q:.2f}' for q in r['reward_q'])} | "
                  f"{' / '.join(f'{a}' for a in r['signal_q'])} of {' / '.join(str(g) for g in r['groups_q'])} | "
                  f"{share:.0%} | {r['step_s']:.1f} | {r['wall_s']:.0f} ({r['cpu_s']:.0f}) | {load} |")

    rows = {s: {seed: r for seed, r in by_seed.items() if r["finished"]} for s, by_seed in rows.items()}
    rows = {s: by_seed for s, by_seed in rows.items() if by_seed}  # from here on, finished runs only
    print("\nHeld-out accuracy per family at the last eval (finished runs): median over seeds [min, max]; the binomial "
          "standard error at the median; the seed-to-seed standard deviation")
    print(f"\n| family (questions) | step 0 (SE) | {' | '.join(rows)} |")
    print("|---|---|" + "---|" * len(rows))
    for f in families + ["all"]:
        nf = n[f] if f != "all" else sum(n.values())
        p0 = any_row["first"]["accuracy"][f] if f != "all" else any_row["all_first"]
        cells = []
        for sampler, by_seed in rows.items():
            ends = [r["last"]["accuracy"][f] if f != "all" else r["all_last"] for r in by_seed.values()]
            med = statistics.median(ends)
            sd = statistics.stdev(ends) if len(ends) > 1 else math.nan
            cells.append(f"{med:.2f} [{min(ends):.2f}, {max(ends):.2f}] (SE {se(med, nf):.2f}, seed SD {sd:.2f})")
        print(f"| {f} ({nf}) | {p0:.2f} ({se(p0, nf):.2f}) | {' | '.join(cells)} |")

    print("\nMedians over seeds: sampled reward by quarter, groups with signal by quarter, share of episodes on the "
          "families in reach, seconds per step")
    print("\n| sampler | seeds | sampled reward by quarter | groups with signal by quarter | episodes in reach | s/step |")
    print("|---|---|---|---|---|---|")
    for sampler, by_seed in rows.items():
        rs = list(by_seed.values())
        rq = " / ".join(f"{statistics.median(r['reward_q'][i] for r in rs):.2f}" for i in range(4))
        sq = " / ".join(f"{statistics.median(r['signal_q'][i] for r in rs):.1f}" for i in range(4))
        shares = statistics.median(draw_shares(runs[sampler][seed], reach)[-1] for seed in by_seed)
        print(f"| {sampler} | {len(rs)} | {rq} | {sq} of {rs[0]['groups_q'][0]} each | {shares:.0%} | "
              f"{statistics.median(r['step_s'] for r in rs):.1f} |")

    first = samplers[0] if samplers[0] in rows else next(iter(rows))
    print(f"\nPer-seed wins of {first} (ahead / tied / behind, over the seeds both finished):")
    for other in rows:
        if other == first:
            continue
        seeds = [s for s in rows[first] if s in rows[other] and rows[first][s]["finished"] and rows[other][s]["finished"]]
        for name, key in [("held-out accuracy, all families, last eval", "all_last"),
                          *[(f"held-out accuracy {f}", f) for f in reach],
                          ("mean sampled reward", "reward"), ("groups with signal per episode", "signal_per_episode")]:
            def value(r):
                return r["last"]["accuracy"][key] if key in families else r[key]
            diffs = [value(rows[first][s]) - value(rows[other][s]) for s in seeds]
            ahead, behind = sum(d > 1e-9 for d in diffs), sum(d < -1e-9 for d in diffs)
            print(f"  vs {other}, {name}: {ahead} / {len(diffs) - ahead - behind} / {behind} of {len(seeds)} "
                  f"(differences {', '.join(f'{d:+.4f}' for d in diffs)}; median "
                  f"{statistics.median(diffs) if diffs else math.nan:+.4f}; sign test p = {sign_test(ahead, behind):.3f})")
    read = report_readings(runs, window, first)
    png = plot(runs, families, reach, out / "compare.png")
    print(f"\nplot: {png}")
    png = plot_tokens(runs, out / "compare-tokens.png", read["tokens"] if read else None)
    print(f"plot per generated token: {png}")


# -- the two readings of RFC 013: per episode and per generated token ------------------------------------------------


def accuracy_all(record: dict) -> float:
    """An eval's held-out accuracy over all families (the mean of the families', which hold as many questions each)."""
    return statistics.mean(record["accuracy"].values())


def token_curve(evals: list[dict]) -> list[tuple[float, float]]:
    """A run's held-out accuracy against the generated tokens it had trained on at each eval: the trainer's cumulative
    `tokens` counter of the eval record (the sampler's `cost` where a record lacks it; the shared step-0 eval has 0)."""
    return [(float(e.get("tokens", e.get("cost", 0.0))), accuracy_all(e)) for e in sorted(evals, key=lambda e: e["step"])]


def interpolate(curve: list[tuple[float, float]], x: float) -> float:
    """The piecewise-linear curve through ``curve`` (x ascending) read at x; refused outside the curve's range, which
    would be a guess, not a reading."""
    if not curve or not curve[0][0] - 1e-9 <= x <= curve[-1][0] + 1e-9:
        raise ValueError(f"x = {x:g} lies outside the curve's range {curve[0][0] if curve else None}..."
                         f"{curve[-1][0] if curve else None}")
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return curve[-1][1] if x >= curve[-1][0] else curve[0][1]


def window_mean(curve: list[tuple[float, float]], lo: float, hi: float, points: int = 9) -> float:
    """The per-token reading: the mean of the curve read by linear interpolation at ``points`` equally spaced x from
    lo to hi (both included), so runs whose evals fall at different token counts are read at the same ones."""
    if points < 2 or hi < lo:
        raise ValueError(f"window_mean: need points >= 2 and lo <= hi, got {points}, {lo:g}, {hi:g}")
    return statistics.mean(interpolate(curve, lo + (hi - lo) * i / (points - 1)) for i in range(points))


def episode_mean(evals: list[dict], first_step: int, last_step: int) -> float:
    """The per-episode reading: the mean held-out accuracy of the evals at steps first_step..last_step (every step
    draws as many episodes in every run, so a window of steps is one of episodes)."""
    inside = [accuracy_all(e) for e in evals if first_step <= e["step"] <= last_step]
    if not inside:
        raise ValueError(f"no eval between steps {first_step} and {last_step}")
    return statistics.mean(inside)


def readings(runs: dict[str, dict[int, dict]], share: float = 0.5, points: int = 9) -> dict:
    """Both readings of every finished run. The per-episode window is the steps from ``share`` x S to S, S the last
    eval's step (the run's length);
    the per-token window the tokens from ``share`` x T to T, T the fewest generated tokens any finished run of the
    comparison ended with, so that every run's curve covers the window (read, never extrapolated or cut to a
    shorter run's evals). Returns {"episode": (first step, last step), "tokens": (lo, hi),
    "per_episode": {sampler: {seed: mean}}, "per_token": {sampler: {seed: mean}}}."""
    done = {s: {seed: r for seed, r in by.items() if r["finished"]} for s, by in runs.items()}
    ends = [token_curve(r["evals"])[-1][0] for by in done.values() for r in by.values()]
    if not ends:
        raise ValueError("no finished run to read")
    steps = max(max(e["step"] for e in r["evals"]) for by in done.values() for r in by.values())
    first, top = math.ceil(share * steps), min(ends)
    lo = share * top
    return {"episode": (first, steps), "tokens": (lo, top),
            "per_episode": {s: {seed: episode_mean(r["evals"], first, steps) for seed, r in by.items()}
                            for s, by in done.items()},
            "per_token": {s: {seed: window_mean(token_curve(r["evals"]), lo, top, points) for seed, r in by.items()}
                          for s, by in done.items()}}


def paired(a: dict[int, float], b: dict[int, float]) -> dict:
    """The paired comparison of two samplers' readings over the seeds both have: per-seed differences a - b,
    ahead / tied / behind, the median difference and the two-sided sign test's p (ties dropped)."""
    seeds = sorted(set(a) & set(b))
    diffs = [a[s] - b[s] for s in seeds]
    ahead, behind = sum(d > 1e-9 for d in diffs), sum(d < -1e-9 for d in diffs)
    return {"seeds": seeds, "diffs": diffs, "ahead": ahead, "tied": len(diffs) - ahead - behind, "behind": behind,
            "median": statistics.median(diffs) if diffs else math.nan, "p": sign_test(ahead, behind)}


def report_readings(runs: dict[str, dict[int, dict]], share: float, first: str) -> dict | None:
    """Print the per-episode and per-token readings: per seed, medians, ``first`` against each other sampler."""
    try:
        read = readings(runs, share)
    except ValueError as error:
        print(f"\nNo readings: {error}")
        return None
    (e0, e1), (t0, t1) = read["episode"], read["tokens"]
    samplers = [s for s in read["per_episode"] if read["per_episode"][s]]
    print(f"\nThe two readings (RFC 013), held-out accuracy over all families, finished runs: per episode, the mean of the "
          f"evals at steps {e0}-{e1}; per generated token, the mean of each run's accuracy read by linear "
          f"interpolation at 9 equally spaced token counts from {t0:.0f} to {t1:.0f} (the fewest tokens a finished run "
          f"ended with: {t1:.0f}; its {share:g})")
    for key, name in (("per_episode", "per episode"), ("per_token", "per generated token")):
        seeds = sorted({seed for s in samplers for seed in read[key][s]})
        print(f"\nReading {name}:\n\n| seed | {' | '.join(samplers)} | {' | '.join(f'{first} - {o}' for o in samplers if o != first)} |")
        print("|---|" + "---|" * (2 * len(samplers) - 1))
        for seed in seeds:
            cells = [f"{read[key][s][seed]:.4f}" if seed in read[key][s] else "" for s in samplers]
            diffs = [f"{read[key][first][seed] - read[key][o][seed]:+.4f}"
                     if seed in read[key][first] and seed in read[key][o] else "" for o in samplers if o != first]
            print(f"| {seed} | {' | '.join(cells)} | {' | '.join(diffs)} |")
        medians = [f"{statistics.median(read[key][s].values()):.4f}" for s in samplers]
        tests = [paired(read[key][first], read[key][o]) for o in samplers if o != first]
        median_diffs = " | ".join(f"{t['median']:+.4f}" for t in tests)
        print(f"| median | {' | '.join(medians)} | {median_diffs} |")
        for other, t in zip([o for o in samplers if o != first], tests):
            print(f"  {first} vs {other}, {name}: ahead / tied / behind {t['ahead']} / {t['tied']} / {t['behind']} of "
                  f"{len(t['seeds'])}; median difference {t['median']:+.4f}; sign test p = {t['p']:.3f}")
    return read


def plot_tokens(runs: dict[str, dict[int, dict]], out_png: Path, window: tuple[float, float] | None = None,
                points: int = 60) -> Path:
    """Held-out accuracy (all families) against generated tokens, one line per sampler: the median over its seeds,
    read by linear interpolation up to the fewest tokens any of them ended with, with the seeds' range shaded; each
    seed's own curve thin; the per-token window marked."""
    import matplotlib
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, 4.8), layout="constrained")
    ax = figure.subplots()
    for i, (sampler, by_seed) in enumerate(runs.items()):
        curves = [token_curve(r["evals"]) for r in by_seed.values() if r["finished"]]
        if not curves:
            continue
        top = min(c[-1][0] for c in curves)
        xs, med, low, high = [], [], [], []
        for k in range(points + 1):
            x = top * k / points
            ys = [interpolate(c, x) for c in curves]
            xs.append(x), med.append(statistics.median(ys)), low.append(min(ys)), high.append(max(ys))
        colour = matplotlib.colormaps["tab10"](i)
        for c in curves:
            ax.plot([x for x, _ in c], [y for _, y in c], color=colour, alpha=0.35, linewidth=0.7)
        ax.fill_between(xs, low, high, color=colour, alpha=0.18, linewidth=0)
        ax.plot(xs, med, color=colour, linewidth=2.2, label=f"{sampler} (median of {len(curves)} seeds, range shaded)")
    if window:
        ax.axvspan(*window, color="grey", alpha=0.12, label="per-token window")
    ax.set_xlabel("generated tokens (cumulative, training rollouts)")
    ax.set_ylabel("held-out greedy accuracy, all families")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("held-out accuracy per generated token", fontsize=10)
    out_png.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out_png, dpi=100)
    return out_png


def sign_test(ahead: int, behind: int) -> float:
    """The two-sided paired sign test's p over the seeds that differ (ties dropped): the chance of a split at least
    this uneven if either sampler were as likely to be ahead."""
    n = ahead + behind
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(ahead, behind) + 1)) / 2**n
    return min(1.0, 2 * tail)


def plot(runs: dict[str, dict[int, dict]], families: list[str], reach: list[str], out_png: Path) -> Path:
    """One figure, the samplers overlaid: held-out accuracy (all families, then each family in reach) against the step,
    sampled reward, cumulative groups with signal and the share of episodes on the families in reach; each seed a thin
    line, the median over seeds a thick one."""
    import matplotlib
    from matplotlib.figure import Figure

    top = ["all", *reach]
    cols = max(len(top), 3)
    figure = Figure(figsize=(4.2 * cols, 7.6), layout="constrained")
    axes = figure.subplots(2, cols, squeeze=False)
    colours = {s: matplotlib.colormaps["tab10"](i) for i, s in enumerate(runs)}

    def lines(ax, series: dict[int, tuple[list[float], list[float]]], colour, label, marker=None):
        for x, y in series.values():
            ax.plot(x, y, color=colour, alpha=0.3, linewidth=0.9, marker=marker, markersize=2)
        xs = sorted({x for xv, _ in series.values() for x in xv})
        med = [statistics.median(y[xv.index(x)] for xv, y in series.values() if x in xv) for x in xs]
        ax.plot(xs, med, color=colour, linewidth=2.4, label=f"{label} (median of {len(series)})", marker=marker)

    for sampler, by_seed in runs.items():
        colour = colours[sampler]
        for ax, family in zip(axes[0], top):
            series = {seed: ([e["step"] for e in r["evals"]],
                             [statistics.mean(e["accuracy"].values()) if family == "all" else e["accuracy"][family]
                              for e in r["evals"]]) for seed, r in by_seed.items()}
            lines(ax, series, colour, sampler, marker="o")
        reward, signal, share = {}, {}, {}
        for seed, r in by_seed.items():
            x = [s["step"] for s in r["steps"]]
            rw = [s["reward"] for s in r["steps"]]
            reward[seed] = (x, [statistics.mean(rw[max(0, i - 3):i + 1]) for i in range(len(rw))])
            total, cum = 0, []
            for s in r["steps"]:
                total += s["groups_with_signal"]
                cum.append(total)
            signal[seed] = (x, cum)
            share[seed] = (x, draw_shares(r, reach))
        lines(axes[1][0], reward, colour, sampler)
        lines(axes[1][1], signal, colour, sampler)
        lines(axes[1][2], share, colour, sampler)
    n = next(iter(next(iter(runs.values())).values()))["evals"][0]["n"]
    for ax, family in zip(axes[0], top):
        count = sum(n.values()) if family == "all" else n[family]
        ax.set_title(f"held-out greedy accuracy, {'all families' if family == 'all' else family} ({count} questions)",
                     fontsize=9)
        ax.set_ylim(0, 1)
    axes[1][0].set_title("sampled reward (mean of the last 4 steps)", fontsize=9)
    axes[1][1].set_title("groups with signal (cumulative)", fontsize=9)
    axes[1][2].set_title(f"share of episodes on {', '.join(reach) or 'no family'}", fontsize=9)
    axes[1][2].set_ylim(0, 1)
    for row in axes:
        for ax in row:
            ax.grid(alpha=0.3)
            ax.set_xlabel("step", fontsize=8)
    for ax in list(axes[0][len(top):]) + list(axes[1][3:]):
        ax.set_visible(False)
    axes[0][0].legend(fontsize=8, loc="lower right")
    seeds = sorted({seed for by in runs.values() for seed in by})
    figure.suptitle(f"{' vs '.join(runs)}: seeds {', '.join(map(str, seeds))} (thin: a seed; thick: the median)")
    out_png.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out_png, dpi=100)
    return out_png


def main() -> None:
    from studies.worlds.peer_sampler import PEERS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--samplers", nargs="+", default=["curriculum", "uniform", PEER],
                        help=f"in this order within each seed, of {', '.join([*PACKAGE_SAMPLERS, *PEERS])}; a peer "
                             "name runs studies/worlds/peer_sampler.py's adapter. With --report-only, run directory "
                             "names (e.g. reach-lr5e-05) are taken too")
    parser.add_argument("--learning-rate", type=float, default=None,
                        help="instead of the pinned 1e-4; the runs go to seedN/SAMPLER-lrLR (e.g. reach-lr5e-05)")
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--datasets", type=lambda s: s.split(","), default=["products", "basic_arithmetic"],
                        help="reasoning-gym datasets, comma-separated; families are dataset x tier")
    parser.add_argument("--tiers", type=int, default=2,
                        help="tiers per dataset: 0 is the default run's, 1 starts at 0 held-out accuracy for SmolLM2")
    parser.add_argument("--train-size", type=int, default=40, help="train tasks per family")
    parser.add_argument("--heldout-size", type=int, default=32,
                        help="held-out questions per family, all evaluated (no train task of the family asks them)")
    parser.add_argument("--eval-every", type=int, default=16,
                        help="held-out eval every N steps (and at step 0 and the end); each asks every held-out question")
    parser.add_argument("--window", type=float, default=0.5,
                        help="the readings' window: per episode the evals from this share of the run's steps to the last, "
                             "per token from this share of T to T, T the fewest tokens a finished run ended with")
    parser.add_argument("--model", choices=["smollm2", "tiny"], default="smollm2")
    parser.add_argument("--tasks-per-step", type=int, default=None)
    parser.add_argument("--group-size", type=int, default=None)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--out", default="runs/compare")
    parser.add_argument("--report-only", action="store_true", help="only print the tables and draw the plot of --out")
    parser.add_argument("--train-one", help=argparse.SUPPRESS)  # the child process: a run's spec (OUT/seedN/SAMPLER.json)
    parser.add_argument("--run", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    known = [*PACKAGE_SAMPLERS, *PEERS]
    for name in args.samplers:
        base, _, rate = name.partition("-lr")
        if base not in known or (rate and not args.report_only) or (rate and not _is_float(rate)):
            parser.error(f"--samplers {name!r}: choose among {', '.join(known)} (with --report-only also a run "
                         "directory name such as reach-lr5e-05); set the learning rate with --learning-rate")
    if args.learning_rate is not None and not args.learning_rate > 0:
        parser.error(f"--learning-rate must be > 0, got {args.learning_rate}")
    if args.train_one:
        train_one(args.train_one, args.run, args.url)
    elif args.report_only:
        report(Path(args.out), args.samplers, args.window)
    else:
        compare(args)


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


if __name__ == "__main__":
    main()
