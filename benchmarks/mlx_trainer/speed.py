"""MLX trainer speed: generation tokens/s of the trainer's sampler beside `mlx_lm.batch_generate` alone on the
same model, prompts and batch; then where a training step's time goes (generation / environment / training /
other) in real runs, with and without the next step's resets prefetched during training, interleaved.

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python -m benchmarks.mlx_trainer.speed --model tiny
    LD_PRELOAD=... .venv/bin/python -m benchmarks.mlx_trainer.speed --model smollm2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.mlx_trainer.common import CHAIN_SUM_CONFIG, SETTINGS, env_prompts, environment, run_training


def bench_generation(model, tokenizer, prompts, max_tokens: int, repeats: int) -> tuple[float, float]:
    """Median tokens/s of the trainer's generate() and of mlx_lm.batch_generate, alternating, same seed each."""
    import mlx.core as mx
    from mlx_lm import batch_generate
    from mlx_lm.sample_utils import make_sampler

    from openenv_prime.mlx_trainer.rollouts.generation import generate

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


def speed(args) -> None:
    from mlx_lm import load

    from openenv_prime.mlx_trainer.config import load_config
    from openenv_prime.mlx_trainer.model.blas import detect_blas
    from openenv_prime.mlx_trainer.training.lora import apply_lora

    tasks, group, new = SETTINGS[args.model]
    batch = tasks * group
    sessions = args.max_sessions or batch
    modes = {"without prefetch": False, "with prefetch": True}
    runs: dict[str, list[dict]] = {mode: [] for mode in modes}
    with tempfile.TemporaryDirectory() as tmp, environment(args.model, Path(tmp)) as (path, url, family, system):
        model, tok = load(path)
        apply_lora(model, load_config(CHAIN_SUM_CONFIG).lora.model_copy(update={"layers": -1 if args.model == "tiny" else 8}))
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=sorted(SETTINGS), default="tiny")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2, help="interleaved training runs per mode (prefetch off / on)")
    parser.add_argument("--max-sessions", type=int, default=0,
                        help="sockets the trainer opens (environment.max_sessions); 0: one per episode of a step, one wave")
    speed(parser.parse_args())


if __name__ == "__main__":
    main()
