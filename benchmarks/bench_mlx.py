"""MLX trainer speed, in one run: (1) generation tokens/s of the trainer's sampler beside
`mlx_lm.batch_generate` alone on the same model, prompts and batch; (2) where a training step's
time goes (generation / environment / training / other) in a real run on the embedded chain_sum
server; (3) `compare`: curriculum vs uniform on SmolLM2 + chain_sum, with the plot.

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python benchmarks/bench_mlx.py speed --model tiny
    LD_PRELOAD=... .venv/bin/python benchmarks/bench_mlx.py speed --model smollm2
    LD_PRELOAD=... .venv/bin/python benchmarks/bench_mlx.py compare --steps 12 --out runs/compare
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

    renderer = Renderer(tokenizer, system_prompt)

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
                 seed: int = 0, family_field: str = "tier", every: int = 4, per_family: int = 4) -> Path:
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
    data["grpo"].update(tasks_per_step=tasks, group_size=group, max_new_tokens=new)
    data["sampler"] = {"name": sampler, "kwargs": {}}
    data["environment"]["base_url"] = url
    data["eval"].update(enabled=evals, every=every, tasks_per_family=per_family)
    train(config_from_dict(data), out, progress=False)
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
    with tempfile.TemporaryDirectory() as tmp, environment(args.model, Path(tmp)) as (path, url, family, system):
        model, tok = load(path)
        apply_lora(model, load_config(None).lora.model_copy(update={"layers": -1 if args.model == "tiny" else 8}))
        prompts = env_prompts(url, tok, tasks, system)
        prompts = [p for p in prompts for _ in range(group)]
        ours, ref = bench_generation(model, tok, prompts, new, args.repeats)
        del model
        run = run_training(path, url, args.steps, Path(tmp) / "run", family_field=family)
        steps = [json.loads(l) for l in (run / "log.jsonl").read_text().splitlines() if '"step"' in l]
        steps = [s for s in steps if s["type"] == "step"][1:] or steps  # the first step carries warm-up
    print(f"\nMLX trainer speed: model {args.model}, BLAS {detect_blas().kind}, batch {tasks} tasks x {group} = {batch}, "
          f"{new} new tokens, {os.cpu_count()} CPUs\n")
    print("| generation | tokens/s (median of %d) |" % args.repeats)
    print("|---|---|")
    print(f"| trainer `generate()` (BatchGenerator, EOS kept) | {ours:,.0f} |")
    print(f"| `mlx_lm.batch_generate` alone (same LoRA-wrapped model) | {ref:,.0f} |")
    print(f"| ratio trainer / batch_generate | **{ours / ref:.2f}x** |")
    secs = {k: statistics.mean(s["seconds"][k] for s in steps) for k in ("generation", "environment", "training", "other")}
    total = sum(secs.values())
    in_trainer = statistics.mean(s["tokens_per_s"] for s in steps)
    print(f"\n| step phase (mean of steps 2..{args.steps}) | seconds | share |")
    print("|---|---|---|")
    for k, v in secs.items():
        print(f"| {k} | {v:.3f} | {v / total:.1%} |")
    print(f"| **outside generation and training** | {secs['environment'] + secs['other']:.3f} | "
          f"**{(secs['environment'] + secs['other']) / total:.1%}** |")
    print(f"\ngeneration inside the training loop: {in_trainer:,.0f} tokens/s "
          f"({in_trainer / ref:.2f}x batch_generate alone above)")


def compare(args) -> None:
    from openenv_prime.envs.launch import local_server
    from openenv_prime.mlx_trainer.plot import plot_runs

    out = Path(args.out)
    runs = []
    with local_server("chain-sum", tiers=5, max_sessions=64) as url:
        for sampler in ("curriculum", "uniform"):
            run = out / sampler
            t = time.perf_counter()
            run_training("smollm2-135m", url, args.steps, run, sampler=sampler, evals=True, seed=args.seed,
                         every=args.eval_every, per_family=args.eval_tasks)
            print(f"{sampler}: {args.steps} steps in {time.perf_counter() - t:.0f} s -> {run}", flush=True)
            runs.append(run)
    png = plot_runs(runs, out / "curriculum_vs_uniform.png")
    print("\n| run | eval step | episodes | tokens | accuracy per tier | overall |")
    print("|---|---|---|---|---|---|")
    for run in runs:
        for line in (run / "log.jsonl").read_text().splitlines():
            e = json.loads(line)
            if e["type"] == "eval":
                acc = " ".join(f"{k}:{v:.2f}" for k, v in e["accuracy"].items())
                print(f"| {run.name} | {e['step']} | {e['episodes']} | {e['tokens']} | {acc} | {e['overall']:.3f} |")
    print(f"\nplot: {png}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("speed")
    p.add_argument("--model", choices=sorted(SETTINGS), default="tiny")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--steps", type=int, default=4)
    p.set_defaults(func=speed)
    c = sub.add_parser("compare")
    c.add_argument("--steps", type=int, default=12)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--out", default="runs/compare")
    c.add_argument("--eval-every", type=int, default=4)
    c.add_argument("--eval-tasks", type=int, default=4, help="test tasks per tier at each eval")
    c.set_defaults(func=compare)
    args = parser.parse_args()
    args.func(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
