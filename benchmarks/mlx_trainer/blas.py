"""MLX speed on this machine with the BLAS bundled in mlx-cpu beside Debian's OpenBLAS preloaded,
in one run: f32 matmul, the tiny test model and SmolLM2-135M (float32 and the shipped Q4_1)
generating through mlx_lm. Each BLAS is measured in its own child process, because LD_PRELOAD
only acts at process start.

    .venv/bin/python -m benchmarks.mlx_trainer.blas            # add --quick to skip the Q4_1 rows
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTIONS = [f"What is {a} + {b}? Reply with only the number." for a, b in ((3, 4), (12, 9), (25, 17), (8, 8), (40, 2), (7, 6), (19, 23), (5, 31))]


def child(args: argparse.Namespace) -> None:
    """Measure in this process and print one JSON object."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import mlx_lm

    from openenv_prime.mlx_trainer.model.blas import detect_blas, matmul_gflops
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model, smollm2_model_dir

    row = {"blas": detect_blas().kind, "gflops_512": matmul_gflops(512), "gflops_1024": matmul_gflops(1024, repeats=3)}
    with tempfile.TemporaryDirectory() as tmp:
        tiny = build_tiny_model(Path(tmp) / "tiny")
        row["tiny_batch64"] = _batch_tps(mlx_lm, tiny, ["1+2=", "say 7:", "9-4=", "rep 3:"] * 16, 16, repeats=3)
    f32 = smollm2_model_dir(args.cache_dir)
    row["smol_f32_batch8"] = _batch_tps(mlx_lm, f32, QUESTIONS, args.new_tokens)
    row["smol_f32_single"] = _single_tps(mlx_lm, f32, args.new_tokens)
    if not args.quick:
        q4 = smollm2_model_dir(args.cache_dir, dequantize=False)
        row["smol_q4_single"] = _single_tps(mlx_lm, q4, 8)
    print(json.dumps(row))


def _batch_tps(mlx_lm, path: Path, questions: list[str], max_tokens: int, repeats: int = 1) -> float:
    """Generated tokens per second of one batch_generate call after a warm-up; the best of
    `repeats` calls, since other processes on a shared machine only ever slow a call down."""
    model, tok = mlx_lm.load(str(path))
    prompts = [tok.apply_chat_template([{"role": "user", "content": q}], add_generation_prompt=True) for q in questions]
    mlx_lm.batch_generate(model, tok, prompts if repeats > 1 else prompts[:2], max_tokens=max_tokens if repeats > 1 else 2)
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        out = mlx_lm.batch_generate(model, tok, prompts, max_tokens=max_tokens, return_token_ids=True)
        best = max(best, sum(len(ids) for ids in out.token_ids) / (time.perf_counter() - start))
    return best


def _single_tps(mlx_lm, path: Path, max_tokens: int) -> float:
    model, tok = mlx_lm.load(str(path))
    prompt = tok.apply_chat_template([{"role": "user", "content": "What is the capital of France?"}], add_generation_prompt=True)
    last = None
    for last in mlx_lm.stream_generate(model, tok, prompt, max_tokens=max_tokens):
        pass
    return last.generation_tps


def parent(args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.table import Table

    from openenv_prime.mlx_trainer.model.sources import smollm2_model_dir

    start = time.perf_counter()
    cache = Path(args.cache_dir or tempfile.mkdtemp(prefix="smollm2-bench-"))
    smollm2_model_dir(cache)
    convert_s = time.perf_counter() - start
    if not args.quick:
        smollm2_model_dir(cache, dequantize=False)
    openblas = sorted(glob.glob("/usr/lib/*/libopenblas.so.0"))
    load_before = os.getloadavg()[0]
    rows = {"bundled": _run_child(args, cache, {})}
    if openblas:
        rows["OpenBLAS"] = _run_child(args, cache, {"LD_PRELOAD": openblas[0]})
        rows["OpenBLAS, 1 thread"] = _run_child(args, cache, {"LD_PRELOAD": openblas[0], "OPENBLAS_NUM_THREADS": "1"})
    metrics = [
        ("f32 matmul 512x512 (GFLOPS)", "gflops_512"),
        ("f32 matmul 1024x1024 (GFLOPS)", "gflops_1024"),
        ("tiny model, batch_generate 64 x 16 tok (tok/s)", "tiny_batch64"),
        (f"SmolLM2 f32, batch_generate 8 x {args.new_tokens} tok (tok/s)", "smol_f32_batch8"),
        (f"SmolLM2 f32, one sequence, {args.new_tokens} tok (tok/s)", "smol_f32_single"),
        ("SmolLM2 Q4_1 as shipped, one sequence (tok/s)", "smol_q4_single"),
    ]
    table = Table(title=f"MLX on this CPU ({os.cpu_count()} cores): the BLAS bundled in mlx-cpu vs Debian's OpenBLAS preloaded")
    table.add_column("measurement")
    for name, row in rows.items():
        table.add_column(f"{name} ({row['blas']})" + (" [x bundled]" if name != "bundled" else ""), justify="right")
    for label, key in metrics:
        values = [row.get(key) for row in rows.values()]
        if all(v is None for v in values):
            continue
        base = values[0]
        cells = [f"{v:,.1f}" + (f" [{v / base:.1f}x]" if i and base else "") if v is not None else "-" for i, v in enumerate(values)]
        table.add_row(label, *cells)
    console = Console(width=150)
    console.print(table)
    console.print(f"load average (1 min) before / after: {load_before:.1f} / {os.getloadavg()[0]:.1f}")
    console.print(f"SmolLM2 GGUF -> mlx_lm float32 conversion: {convert_s:.1f} s (once; cached afterwards)")
    if not openblas:
        console.print("OpenBLAS is not installed: `apt-get install -y libopenblas0-pthread` adds the second column.")


def _run_child(args: argparse.Namespace, cache: Path, extra_env: dict[str, str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "OPENBLAS_NUM_THREADS")} | extra_env
    cmd = [sys.executable, "-m", __spec__.name, "--child", "--cache-dir", str(cache), "--new-tokens", str(args.new_tokens)]
    if args.quick:
        cmd.append("--quick")
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=1800)
    if out.returncode:
        raise SystemExit(f"benchmark child failed ({extra_env or 'bundled BLAS'}):\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache-dir", help="where SmolLM2 is converted (default: a fresh temporary folder)")
    parser.add_argument("--new-tokens", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="skip the slow Q4_1 rows")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    (child if args.child else parent)(args)


if __name__ == "__main__":
    main()
