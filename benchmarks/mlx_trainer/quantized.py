"""SmolLM2 f32 against mlx's own 8- and 4-bit quantization (a QLoRA base), same LoRA and batch: generation
tokens/s and training seconds, interleaved rounds in one process.

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python -m benchmarks.mlx_trainer.quantized --tasks 1 --group 4 --max-tokens 8 --rounds 1
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.mlx_trainer.common import shared_batch


def quantized(args) -> None:
    import mlx.core as mx
    import mlx.optimizers as optim

    from openenv_prime.mlx_trainer.config import GRPOConfig, LoRAConfig
    from openenv_prime.mlx_trainer.model.blas import detect_blas
    from openenv_prime.mlx_trainer.model.sources import load_base
    from openenv_prime.mlx_trainer.rollouts.generation import generate
    from openenv_prime.mlx_trainer.training.grpo import make_batch, train_on_batch
    from openenv_prime.mlx_trainer.training.lora import apply_lora

    with tempfile.TemporaryDirectory() as tmp:
        spec = shared_batch(Path(tmp), args.tasks, args.group, args.max_tokens, 0)
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    quantized(parser.parse_args())


if __name__ == "__main__":
    main()
