"""The MLX trainer against mlx-lm-lora's GRPO, side by side on the same batch: SmolLM2 f32, the same chain_sum
prompts, LoRA and optimizer, every group with signal; generation tokens/s and seconds, training seconds.

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python -m benchmarks.mlx_trainer.vs_mlx_lm_lora --rounds 2 --repeats 2

It installs mlx-lm-lora (not a dependency of this package) into `.venv-mlx-lm-lora/` beside the same mlx and
mlx-lm versions, then times both trainers in alternating subprocesses (this module again, with --side).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.mlx_trainer.common import ROOT, shared_batch

PEER = "mlx-lm-lora==5.10.2"
PEER_VENV = ROOT / ".venv-mlx-lm-lora"


def peer_python() -> Path:
    """The separate venv with mlx-lm-lora, created on first use with the mlx/mlx-lm versions of this one."""
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
        from openenv_prime.mlx_trainer.rollouts.generation import generate
        from openenv_prime.mlx_trainer.training.grpo import make_batch, train_on_batch

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
    from openenv_prime.mlx_trainer.model.blas import detect_blas

    python = peer_python()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        spec = shared_batch(Path(tmp), args.tasks, args.group, args.max_tokens, args.seed)
        batch_file = Path(tmp) / "batch.json"
        batch_file.write_text(json.dumps(spec))
        results: dict[str, list[dict]] = {"ours": [], "peer": []}
        sides = [("ours", sys.executable), ("peer", str(python))]
        for r in range(args.rounds):
            for name, exe in (sides if r % 2 == 0 else sides[::-1]):
                out = subprocess.run([exe, "-m", __spec__.name, "--side", name, "--batch", str(batch_file),
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2, help="interleaved subprocess runs per trainer")
    parser.add_argument("--repeats", type=int, default=2, help="timed generation + training steps per run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--side", choices=("ours", "peer"), help=argparse.SUPPRESS)  # internal: one timed run
    parser.add_argument("--batch", help=argparse.SUPPRESS)
    args = parser.parse_args()
    side(args) if args.side else vs_mlx_lm_lora(args)


if __name__ == "__main__":
    main()
