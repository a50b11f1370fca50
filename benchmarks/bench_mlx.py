"""MLX trainer speed, in one run: (1) generation tokens/s of the trainer's sampler beside
`mlx_lm.batch_generate` alone on the same model, prompts and batch; (2) where a training step's
time goes (generation / environment / training / other) in real runs, with and without the next step's
resets prefetched during training, interleaved; (3) `compare`: curriculum vs uniform on SmolLM2 + chain_sum, with the plot.

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python benchmarks/bench_mlx.py speed --model tiny
    LD_PRELOAD=... .venv/bin/python benchmarks/bench_mlx.py speed --model smollm2
    LD_PRELOAD=... .venv/bin/python benchmarks/bench_mlx.py compare --steps 12 --out runs/compare
    LD_PRELOAD=... .venv/bin/python benchmarks/bench_mlx.py vs-mlx-lm-lora --rounds 2
    LD_PRELOAD=... .venv/bin/python benchmarks/bench_mlx.py interrupt --tries 4

`vs-mlx-lm-lora` installs mlx-lm-lora (not a dependency of this package) into `.venv-mlx-lm-lora/`
beside the same mlx and mlx-lm versions, then times both trainers in alternating subprocesses on
the same SmolLM2 model, prompts, LoRA and batch (every group with signal).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SETTINGS = {  # model -> (tasks per step, group size, max new tokens)
    "tiny": (16, 8, 3),
    "smollm2": (4, 4, 16),
}


def model_path(name: str, tmp: Path) -> str:
    from openenv_prime.mlx_trainer.models import build_tiny_model, resolve_model

    if name == "tiny":
        return str(build_tiny_model(tmp / "tiny"))
    return str(resolve_model("smollm2-135m"))


def env_prompts(url: str, tokenizer, n: int, system_prompt: str) -> list[list[int]]:
    """The prompts the trainer builds: real observations of the environment, chat-templated."""
    import asyncio

    from openenv_prime.client import EpisodeSession
    from openenv_prime.mlx_trainer.generation import render_prompt
    from openenv_prime.mlx_trainer.rollouts import Renderer

    renderer = Renderer(tokenizer, system_prompt, action_field="answer")  # chain_sum's one action field

    async def observations():
        out = []
        async with EpisodeSession(url) as s:
            for i in range(n):
                out.append((await s.reset(split="train", index=i % 20)).observation)
        return out

    return [render_prompt(tokenizer, renderer.messages(o)) for o in asyncio.run(observations())]


def bench_generation(model, tokenizer, prompts, max_tokens: int, repeats: int) -> tuple[float, float]:
    """Median tokens/s of the trainer's generate() and of mlx_lm.batch_generate, alternating, same seed each."""
    import mlx.core as mx
    from mlx_lm import batch_generate
    from mlx_lm.sample_utils import make_sampler

    from openenv_prime.mlx_trainer.generation import generate

    ours, ref = [], []
    generate(model, tokenizer, prompts, max_tokens=max_tokens, temperature=1.0)  # warm-up
    for r in range(repeats):
        mx.random.seed(r)
        t = time.perf_counter()
        out = generate(model, tokenizer, prompts, max_tokens=max_tokens, temperature=1.0)
        ours.append(sum(len(c.tokens) for c in out) / (time.perf_counter() - t))
        mx.random.seed(r)
        t = time.perf_counter()
        res = batch_generate(model, tokenizer, prompts, max_tokens=max_tokens, return_token_ids=True,
                             sampler=make_sampler(temp=1.0), completion_batch_size=len(prompts),
                             prefill_batch_size=len(prompts))
        # batch_generate drops the EOS of stopped sequences; count it as generated, as the trainer does
        ref.append(sum(len(ids) + (len(ids) < max_tokens) for ids in res.token_ids) / (time.perf_counter() - t))
    return statistics.median(ours), statistics.median(ref)


def run_training(model: str, url: str, steps: int, out: Path, sampler: str = "curriculum", evals: bool = False,
                 seed: int = 0, family_field: str = "tier", every: int = 4, per_family: int = 4,
                 resume: bool = False, max_new_tokens: int | None = None, prefetch: bool = True,
                 max_sessions: int = 64) -> Path:
    from openenv_prime.mlx_trainer.config import config_from_dict, load_config
    from openenv_prime.mlx_trainer.loop import train

    tiny = family_field == "level"
    tasks, group, new = SETTINGS["tiny" if tiny else "smollm2"]
    data = load_config(None).model_dump()
    if tiny:
        data["lora"]["layers"] = -1
        data["grpo"].update(learning_rate=3e-4, system_prompt="")
    data["environment"]["family_field"] = family_field
    data.update(seed=seed, steps=steps, plot=False)
    data["model"]["path"] = model
    data["grpo"].update(tasks_per_step=tasks, group_size=group, max_new_tokens=max_new_tokens or new)
    data["sampler"] = {"name": sampler, "kwargs": {}}
    data["environment"].update(base_url=url, prefetch=prefetch, max_sessions=max_sessions)
    data["eval"].update(enabled=evals, every=every, tasks_per_family=per_family, max_new_tokens=max_new_tokens or new)
    train(config_from_dict(data), out, resume=resume, progress=False)
    return out


@contextlib.contextmanager
def environment(model: str, tmp: Path):
    """SmolLM2 on chain_sum; the tiny model on the tests' toy environment ("say 7") after a format-SFT
    warm start, so that its groups have signal and the training phase is really exercised."""
    from openenv_prime.envs.launch import local_server

    if model == "tiny":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "mlx_trainer"))
        from trainer_helpers import SMALL_VOCAB, format_sft_model, toy_server

        from openenv_prime.mlx_trainer.models import build_tiny_model

        base = build_tiny_model(tmp / "tiny", vocab=SMALL_VOCAB)
        path = format_sft_model(base, tmp / "sft", ["say 7:"])
        with toy_server("0") as (url, _):
            yield str(path), url, "level", ""
    else:
        with local_server("chain-sum", tiers=5, max_sessions=64) as url:
            yield model_path(model, tmp), url, "tier", "Reply with only the final number."


def speed(args) -> None:
    from mlx_lm import load

    from openenv_prime.mlx_trainer.blas import detect_blas
    from openenv_prime.mlx_trainer.config import load_config
    from openenv_prime.mlx_trainer.lora import apply_lora

    tasks, group, new = SETTINGS[args.model]
    batch = tasks * group
    sessions = args.max_sessions or batch
    modes = {"without prefetch": False, "with prefetch": True}
    runs: dict[str, list[dict]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory() as tmp, environment(args.model, Path(tmp)) as (path, url, family, system):
        model, tok = load(path)
        apply_lora(model, load_config(None).lora.model_copy(update={"layers": -1 if args.model == "tiny" else 8}))
        prompts = env_prompts(url, tok, tasks, system)
        prompts = [p for p in prompts for _ in range(group)]
        ours, ref = bench_generation(model, tok, prompts, new, args.repeats)
        del model
        for r in range(args.rounds):  # the two modes interleaved, so that the machine's load hits both alike
            for mode, prefetch in modes.items():
                run = run_training(path, url, args.steps, Path(tmp) / f"run-{r}-{prefetch}", family_field=family,
                                   prefetch=prefetch, max_sessions=sessions)
                steps = [s for s in map(json.loads, (run / "log.jsonl").read_text().splitlines()) if s["type"] == "step"]
                runs[mode] += steps[1:] or steps  # the first step carries warm-up
    print(f"\nMLX trainer speed: model {args.model}, BLAS {detect_blas().kind}, batch {tasks} tasks x {group} = {batch}, "
          f"{new} new tokens, {sessions} sockets ({-(-batch // sessions)} wave(s) a step), {os.cpu_count()} CPUs\n")
    print("| generation | tokens/s (median of %d) |" % args.repeats)
    print("|---|---|")
    print(f"| trainer `generate()` (BatchGenerator, EOS kept) | {ours:,.0f} |")
    print(f"| `mlx_lm.batch_generate` alone (same LoRA-wrapped model) | {ref:,.0f} |")
    print(f"| ratio trainer / batch_generate | **{ours / ref:.2f}x** |")
    phases = ("generation", "environment", "training", "other")
    mean = {mode: {k: statistics.mean(s["seconds"][k] for s in steps) for k in phases} for mode, steps in runs.items()}
    total = {mode: sum(m.values()) for mode, m in mean.items()}
    n = len(runs["with prefetch"])
    print(f"\n| step phase (mean of {n} steps, {args.rounds} interleaved runs each) | "
          + " | ".join(f"{mode}: s | share" for mode in modes) + " |")
    print("|---|" + "---|---|" * len(modes))
    for k in phases:
        print(f"| {k} | " + " | ".join(f"{mean[m][k]:.3f} | {mean[m][k] / total[m]:.1%}" for m in modes) + " |")
    outside = {m: mean[m]["environment"] + mean[m]["other"] for m in modes}
    print("| **outside generation and training** | "
          + " | ".join(f"{outside[m]:.3f} | **{outside[m] / total[m]:.1%}**" for m in modes) + " |")
    print("| step | " + " | ".join(f"{total[m]:.3f} | 100%" for m in modes) + " |")
    hidden = statistics.mean(s["prefetch_seconds"] for s in runs["with prefetch"])
    print(f"\nwith prefetch: {hidden:.3f} s of resets a step ran while the step before trained; "
          f"step time with / without prefetch: **{total['with prefetch'] / total['without prefetch']:.2f}x**")
    in_trainer = statistics.mean(s["tokens_per_s"] for s in runs["with prefetch"])
    print(f"generation inside the training loop: {in_trainer:,.0f} tokens/s "
          f"({in_trainer / ref:.2f}x batch_generate alone above)")


def interrupt(args) -> None:
    """How long `openenv-prime train` (the embedded default, evals off) takes to stop after Ctrl-C, sent at
    spread-out moments of step 2 (generation or training), beside how long step 1's generation took."""
    import signal
    import subprocess

    from openenv_prime.mlx_trainer.config import config_from_dict, dump_toml, load_config

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.tries):
            run, cfg = Path(tmp) / f"run{k}", Path(tmp) / f"config{k}.toml"
            data = load_config(None).model_dump()
            data.update(steps=50, plot=False)
            data["eval"]["enabled"] = False
            cfg.write_text(dump_toml(config_from_dict(data)))
            proc = subprocess.Popen([sys.executable, "-m", "openenv_prime", "train", str(cfg), "--out", str(run),
                                     "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            while not (run / "checkpoints" / "step_000001" / "state.json").exists():
                if proc.poll() is not None:
                    raise SystemExit(f"train stopped before its first checkpoint: {proc.stderr.read()[-2000:]}")
                time.sleep(0.01)
            first = json.loads((run / "log.jsonl").read_text().splitlines()[-1])["seconds"]
            delay = (k + 0.5) / args.tries * (first["generation"] + first["training"])
            time.sleep(delay)
            sent = time.perf_counter()
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=600)
            rows.append((delay, time.perf_counter() - sent, proc.returncode, first, err.strip().splitlines()[-1][:90]))
            print(f"try {k + 1}: stopped {rows[-1][1]:.2f} s after Ctrl-C (exit {proc.returncode})", file=sys.stderr, flush=True)
    print(f"\nCtrl-C during step 2 of the default run (SmolLM2, {os.cpu_count()} CPUs)\n")
    print("| Ctrl-C at (s into step 2) | step 1: generation s / training s | seconds to exit | exit status | last line |")
    print("|---|---|---|---|---|")
    for delay, took, code, first, line in rows:
        print(f"| {delay:.1f} | {first['generation']:.1f} / {first['training']:.1f} | {took:.2f} | {code} | {line} |")
    print(f"\nmedian {statistics.median(r[1] for r in rows):.2f} s, max {max(r[1] for r in rows):.2f} s to exit "
          "(each includes writing the final checkpoint and closing the embedded server)")


def compare(args) -> None:
    """Curriculum vs uniform for each seed, one after the other (a killed compare resumes where it
    stopped: finished runs are skipped, a started one continues from its checkpoint), then the report."""
    from openenv_prime.envs.launch import local_server
    from openenv_prime.mlx_trainer.checkpoint import latest_checkpoint

    out = Path(args.out)
    if not args.report_only:
        with local_server("chain-sum", tiers=args.tiers, max_sessions=64) as url:
            for seed in args.seeds:
                for sampler in args.samplers:
                    run = out / f"seed{seed}" / sampler
                    if _finished(run):
                        continue
                    t = time.perf_counter()
                    run_training("smollm2-135m", url, args.steps, run, sampler=sampler, evals=True, seed=seed,
                                 every=args.eval_every, per_family=args.eval_tasks,
                                 resume=latest_checkpoint(run) is not None, max_new_tokens=args.max_tokens)
                    print(f"seed {seed} {sampler}: {args.steps} steps in {time.perf_counter() - t:.0f} s -> {run}",
                          flush=True)
    compare_report(out)


def _finished(run: Path) -> bool:
    from openenv_prime.mlx_trainer.checkpoint import latest_checkpoint

    last = latest_checkpoint(run)
    return last is not None and json.loads((last / "state.json").read_text()).get("finished", False)


def _records(run: Path) -> tuple[list[dict], list[dict]]:
    lines = [json.loads(l) for l in (run / "log.jsonl").read_text().splitlines() if l.strip()]
    return [l for l in lines if l["type"] == "step"], [l for l in lines if l["type"] == "eval"]


def compare_report(out: Path) -> None:
    """Per seed and median: sampled reward by quarter of the run, groups with signal, greedy eval
    accuracy per family at the last eval; plus the overlaid plot."""
    from openenv_prime.mlx_trainer.plot import plot_compare

    runs = sorted(p for p in out.glob("seed*/*") if (p / "log.jsonl").is_file())
    if not runs:
        raise SystemExit(f"{out}: no runs yet")
    rows: dict[str, list[dict]] = {}
    for run in runs:
        steps, evals = _records(run)
        if not steps:
            continue
        n = len(steps)
        quarters = [steps[i * n // 4:(i + 1) * n // 4] for i in range(4)]
        rows.setdefault(run.name, []).append({
            "seed": run.parent.name, "steps": n, "done": _finished(run),
            "quarters": [statistics.mean(s["reward"] for s in q) if q else float("nan") for q in quarters],
            "mean": statistics.mean(s["reward"] for s in steps),
            "signal": (sum(s["groups_with_signal"] for s in steps), sum(s["groups"] for s in steps)),
            "share0": steps[-1]["sampler"].get("key/0/draw_share", float("nan")),
            "eval_step": evals[-1]["step"] if evals else None,
            "accuracy": evals[-1]["accuracy"] if evals else {},
            "first_accuracy": evals[0]["accuracy"] if evals else {},
        })
    families = sorted({f for rs in rows.values() for r in rs for f in r["accuracy"]}, key=lambda f: (len(f), f))
    print(f"\n| sampler | seed | steps | sampled reward by quarter | groups with signal | family 0 share of draws | "
          f"greedy eval accuracy per family ({', '.join(families)}) at step 0 -> last eval |")
    print("|---|---|---|---|---|---|---|")
    for sampler, rs in sorted(rows.items()):
        for r in rs:
            q = " / ".join(f"{x:.2f}" for x in r["quarters"])
            acc = " ".join(f"{r['first_accuracy'].get(f, 0):.2f}->{r['accuracy'].get(f, 0):.2f}" for f in families)
            part = "" if r["done"] else " (unfinished)"
            print(f"| {sampler} | {r['seed']} | {r['steps']}{part} | {q} | {r['signal'][0]} of {r['signal'][1]} | "
                  f"{r['share0']:.0%} | {acc} (eval at step {r['eval_step']}) |")
        med_q = " / ".join(f"{statistics.median(r['quarters'][i] for r in rs):.2f}" for i in range(4))
        med_sig = statistics.median(r["signal"][0] for r in rs)
        med_acc = " ".join(f"{statistics.median(r['accuracy'].get(f, 0) for r in rs):.2f}" for f in families)
        med_share = statistics.median(r["share0"] for r in rs)
        print(f"| **{sampler} median** | {len(rs)} seeds | | {med_q} | {med_sig:.0f} | {med_share:.0%} | {med_acc} |")
    if set(rows) >= {"curriculum", "uniform"}:
        by_seed = {r["seed"]: r for r in rows["uniform"]}
        ahead = [r["seed"] for r in rows["curriculum"] if r["seed"] in by_seed
                 and r["mean"] > by_seed[r["seed"]]["mean"]]
        paired = sum(1 for r in rows["curriculum"] if r["seed"] in by_seed)
        print(f"\ncurriculum ahead of uniform in mean sampled reward on {len(ahead)} of {paired} seeds")
    png = plot_compare(runs, out / "curriculum_vs_uniform.png")
    print(f"plot: {png}")


PEER = "mlx-lm-lora==5.10.2"
PEER_VENV = Path(__file__).resolve().parents[1] / ".venv-mlx-lm-lora"


def peer_python() -> Path:
    """The separate venv with mlx-lm-lora, created on first use with the mlx/mlx-lm versions of this one."""
    import subprocess
    from importlib.metadata import version

    python = PEER_VENV / "bin" / "python"
    try:
        subprocess.run([str(python), "-c", "import mlx_lm_lora"], check=True, capture_output=True)
        return python
    except (OSError, subprocess.CalledProcessError):
        pass
    print(f"installing {PEER} into {PEER_VENV} (once) ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", f"mlx[cpu]=={version('mlx')}",
                    f"mlx-lm=={version('mlx-lm')}", PEER], check=True)
    return python


def peer_batch(path: Path, tasks: int, group: int, new_tokens: int, seed: int) -> dict:
    """The shared batch: chain_sum prompts as the trainer renders them, completions sampled once by
    SmolLM2, rewards alternating 1/0 inside each group so that every group carries signal."""
    import mlx.core as mx
    from mlx_lm import load

    from openenv_prime.envs.launch import local_server
    from openenv_prime.mlx_trainer.generation import generate
    from openenv_prime.mlx_trainer.grpo import group_advantages

    model_dir = model_path("smollm2", path)
    model, tok = load(model_dir)
    with local_server("chain-sum", tiers=5, max_sessions=8) as url:
        prompts = env_prompts(url, tok, tasks, "Reply with only the final number.")
    mx.random.seed(seed)
    expanded = [p for p in prompts for _ in range(group)]
    completions = generate(model, tok, expanded, max_tokens=new_tokens, temperature=1.0)
    advantages = []
    for _ in prompts:
        advantages += group_advantages([float(i % 2) for i in range(group)])
    return {"model": model_dir, "prompts": prompts, "group": group, "max_tokens": new_tokens,
            "completions": [c.tokens for c in completions], "advantages": advantages,
            "pad": tok.pad_token_id if tok.pad_token_id is not None else 0}


def side(args) -> None:
    """One timed run of one trainer (in its own venv): load, LoRA, warm up, then generation and
    training steps on the shared batch; prints one JSON line."""
    import mlx.core as mx
    import mlx.optimizers as optim
    from mlx_lm import load
    from mlx_lm.tuner.utils import linear_to_lora_layers

    spec = json.loads(Path(args.batch).read_text())
    prompts, group, max_tokens = spec["prompts"], spec["group"], spec["max_tokens"]
    model, tok = load(spec["model"])
    model.freeze()
    mx.random.seed(0)
    linear_to_lora_layers(model, 8, {"rank": 8, "scale": 20.0, "dropout": 0.0})
    opt = optim.Adam(learning_rate=2e-5)
    expanded = [p for p in prompts for _ in range(group)]

    if args.side == "peer":
        import mlx.nn as nn
        from mlx.utils import tree_flatten
        from mlx_lm_lora.trainer import grpo_trainer as peer

        def gen():
            out, _, _ = peer.generate_grpo(model, tok, prompts, max_tokens, group, len(prompts), "", 1.0, 1.0, 0, 0.0)
            return sum(c.size for c in out)

        value_and_grad = nn.value_and_grad(model, peer.grpo_loss)
        completions = [mx.array(c, dtype=mx.int32) for c in spec["completions"]]
        indices = [i for i in range(len(prompts)) for _ in range(group)]
        texts = [tok.decode(c) for c in spec["completions"]]
        batch = (prompts, [[] for _ in prompts], ["" for _ in prompts], ["" for _ in prompts], None)

        def train():  # the body of mlx_lm_lora's train_grpo step(), beta 0 (no reference model)
            (loss, toks, metrics), grad = peer._grpo_value_and_grad(
                value_and_grad, model, max(len(prompts), 1), batch=batch, completions=completions,
                completion_texts=texts, batch_indices=indices, advantages=mx.array(spec["advantages"]),
                reward_metrics={}, beta=0.0, epsilon=0.2, epsilon_high=0.2, ref_model=None,
                grpo_loss_type="grpo", importance_sampling_level="token", max_tokens=max_tokens)
            finite = mx.isfinite(loss) & mx.all(mx.stack([mx.all(mx.isfinite(v)) for _, v in tree_flatten(grad)]))
            assert finite.item()
            opt.update(model, grad)
            mx.eval(model.state, opt.state, loss, toks, metrics)
        model.train()
    else:
        from openenv_prime.mlx_trainer.config import GRPOConfig
        from openenv_prime.mlx_trainer.generation import generate
        from openenv_prime.mlx_trainer.grpo import make_batch, train_on_batch

        cfg = GRPOConfig(group_size=group, max_new_tokens=max_tokens, learning_rate=2e-5)

        def gen():
            return sum(len(c.tokens) for c in generate(model, tok, expanded, max_tokens=max_tokens, temperature=1.0))

        seqs = [(p, c) for p, c in zip(expanded, spec["completions"])]

        def train():
            train_on_batch(model, opt, make_batch(seqs, spec["advantages"], spec["pad"]), cfg)

    mx.random.seed(1)
    gen()
    train()  # warm-up of both paths
    gens, trains = [], []
    for r in range(args.repeats):
        mx.random.seed(100 + r)
        t = time.perf_counter()
        tokens = gen()
        gens.append((tokens, time.perf_counter() - t))
        t = time.perf_counter()
        train()
        trains.append(time.perf_counter() - t)
    print(json.dumps({"side": args.side, "gen": gens, "train": trains}), flush=True)


def vs_mlx_lm_lora(args) -> None:
    import subprocess

    from openenv_prime.mlx_trainer.blas import detect_blas

    python = peer_python()
    here = Path(__file__).resolve()
    env = {**os.environ, "PYTHONPATH": str(here.parents[1])}
    with tempfile.TemporaryDirectory() as tmp:
        spec = peer_batch(Path(tmp), args.tasks, args.group, args.max_tokens, args.seed)
        batch_file = Path(tmp) / "batch.json"
        batch_file.write_text(json.dumps(spec))
        results: dict[str, list[dict]] = {"ours": [], "peer": []}
        sides = [("ours", sys.executable), ("peer", str(python))]
        for r in range(args.rounds):
            for name, exe in (sides if r % 2 == 0 else sides[::-1]):
                out = subprocess.run([exe, str(here), "_side", "--side", name, "--batch", str(batch_file),
                                      "--repeats", str(args.repeats)], env=env, capture_output=True, text=True)
                if out.returncode != 0:
                    raise SystemExit(f"{name} run failed:\n{out.stderr[-3000:]}")
                results[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
                print(f"round {r + 1}: {name} done", file=sys.stderr, flush=True)
    rows = {}
    for name, runs in results.items():
        gens = [g for run in runs for g in run["gen"]]
        trains = [t for run in runs for t in run["train"]]
        gen_s = statistics.median(s for _, s in gens)
        tok_s = statistics.median(n / s for n, s in gens)
        train_s = statistics.median(trains)
        rows[name] = (tok_s, gen_s, train_s, gen_s + train_s)
    batch = args.tasks * args.group
    print(f"\nSmolLM2-135M f32 vs mlx-lm-lora 5.10.2: {args.tasks} prompts x {args.group} = {batch} sequences, "
          f"up to {args.max_tokens} new tokens, LoRA rank 8 / scale 20 on the last 8 blocks, Adam 2e-5, no KL; "
          f"BLAS {detect_blas().kind}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
          f"median of {args.rounds} interleaved rounds x {args.repeats} repeats\n")
    print("| trainer | generation tok/s | generation s | training s | step s (gen + train) |")
    print("|---|---|---|---|---|")
    for name, label in (("ours", "openenv-prime"), ("peer", "mlx-lm-lora")):
        tok_s, gen_s, train_s, step_s = rows[name]
        print(f"| {label} | {tok_s:.1f} | {gen_s:.2f} | {train_s:.2f} | {step_s:.2f} |")
    o, p = rows["ours"], rows["peer"]
    print(f"| **ratio ours / mlx-lm-lora** | {o[0] / p[0]:.2f}x | {o[1] / p[1]:.2f}x | {o[2] / p[2]:.2f}x | **{o[3] / p[3]:.2f}x** |")


def quantized(args) -> None:
    """f32 against mlx's own 8- and 4-bit quantization of SmolLM2 (QLoRA base), same LoRA and batch:
    generation tok/s and training seconds, interleaved rounds in one process."""
    import mlx.core as mx
    import mlx.optimizers as optim

    from openenv_prime.mlx_trainer.blas import detect_blas
    from openenv_prime.mlx_trainer.config import GRPOConfig, LoRAConfig
    from openenv_prime.mlx_trainer.generation import generate
    from openenv_prime.mlx_trainer.grpo import make_batch, train_on_batch
    from openenv_prime.mlx_trainer.lora import apply_lora
    from openenv_prime.mlx_trainer.models import load_base

    with tempfile.TemporaryDirectory() as tmp:
        spec = peer_batch(Path(tmp), args.tasks, args.group, args.max_tokens, 0)
    expanded = [p for p in spec["prompts"] for _ in range(spec["group"])]
    batch = make_batch(list(zip(expanded, spec["completions"])), spec["advantages"], spec["pad"])
    cfg = GRPOConfig(group_size=args.group, max_new_tokens=args.max_tokens)
    models = {}
    for bits in (0, 8, 4):
        mx.random.seed(0)
        model, tok = load_base(spec["model"], bits, 64)
        apply_lora(model, LoRAConfig(layers=8))
        models[bits] = (model, tok, optim.Adam(learning_rate=2e-5))
        generate(model, tok, expanded[:2], max_tokens=2, temperature=1.0)  # warm-up
    times: dict[int, list[tuple[float, float]]] = {b: [] for b in models}
    for r in range(args.rounds):
        for bits, (model, tok, opt) in models.items():
            mx.random.seed(r)
            t = time.perf_counter()
            n = sum(len(c.tokens) for c in generate(model, tok, expanded, max_tokens=args.max_tokens, temperature=1.0))
            gen = n / (time.perf_counter() - t)
            t = time.perf_counter()
            train_on_batch(model, opt, batch, cfg)
            times[bits].append((gen, time.perf_counter() - t))
            print(f"round {r + 1}, {bits or 32} bits: generation {gen:.1f} tok/s, training {times[bits][-1][1]:.2f} s",
                  file=sys.stderr, flush=True)
    print(f"\nSmolLM2-135M base precision on CPU ({detect_blas().kind}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.1f}): {len(expanded)} sequences, {args.max_tokens} new tokens, LoRA rank 8 on the last "
          f"8 blocks, median of {args.rounds} interleaved rounds\n")
    print("| base | generation tok/s | training s | vs f32 (gen / train) |")
    print("|---|---|---|---|")
    base = [statistics.median(x[i] for x in times[0]) for i in (0, 1)]
    for bits, label in ((0, "float32"), (8, "8-bit (group 64)"), (4, "4-bit (group 64)")):
        g, t = (statistics.median(x[i] for x in times[bits]) for i in (0, 1))
        print(f"| {label} | {g:.1f} | {t:.2f} | {g / base[0]:.2f}x / {t / base[1]:.2f}x |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("speed")
    p.add_argument("--model", choices=sorted(SETTINGS), default="tiny")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--rounds", type=int, default=2, help="interleaved training runs per mode (prefetch off / on)")
    p.add_argument("--max-sessions", type=int, default=0,
                   help="sockets the trainer opens (environment.max_sessions); 0: one per episode of a step, one wave")
    p.set_defaults(func=speed)
    i = sub.add_parser("interrupt", help="seconds from Ctrl-C to exit of `openenv-prime train` on its default")
    i.add_argument("--tries", type=int, default=4)
    i.set_defaults(func=interrupt)
    c = sub.add_parser("compare")
    c.add_argument("--steps", type=int, default=48)
    c.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    c.add_argument("--tiers", type=int, default=5)
    c.add_argument("--max-tokens", type=int, default=16)
    c.add_argument("--out", default="runs/compare")
    c.add_argument("--eval-every", type=int, default=16)
    c.add_argument("--eval-tasks", type=int, default=8, help="test tasks per tier at each eval")
    c.add_argument("--samplers", nargs="+", default=["curriculum", "uniform"], choices=["curriculum", "uniform"],
                   help="run only these (two processes, one per sampler, share a machine's cores)")
    c.add_argument("--report-only", action="store_true", help="only print the table and plot of the runs in --out")
    c.set_defaults(func=compare)
    v = sub.add_parser("vs-mlx-lm-lora", help="side by side with mlx-lm-lora's GRPO on the same batch")
    v.add_argument("--tasks", type=int, default=4)
    v.add_argument("--group", type=int, default=4)
    v.add_argument("--max-tokens", type=int, default=16)
    v.add_argument("--rounds", type=int, default=2, help="interleaved subprocess runs per trainer")
    v.add_argument("--repeats", type=int, default=2, help="timed generation + training steps per run")
    v.add_argument("--seed", type=int, default=0)
    v.set_defaults(func=vs_mlx_lm_lora)
    q = sub.add_parser("quantized", help="f32 vs 8-bit vs 4-bit SmolLM2 base: generation and training speed")
    q.add_argument("--tasks", type=int, default=4)
    q.add_argument("--group", type=int, default=4)
    q.add_argument("--max-tokens", type=int, default=16)
    q.add_argument("--rounds", type=int, default=2)
    q.set_defaults(func=quantized)
    w = sub.add_parser("_side")  # internal: one timed run inside a trainer's venv
    w.add_argument("--side", choices=("ours", "peer"), required=True)
    w.add_argument("--batch", required=True)
    w.add_argument("--repeats", type=int, default=2)
    w.set_defaults(func=side)
    args = parser.parse_args()
    args.func(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
