"""What the MLX trainer benchmarks (`benchmarks/mlx_trainer/`) share: the model and environment of a run,
the prompts the trainer renders, a short training run with the settings of `configs/mlx/chain-sum.toml`, and
the fixed batch two trainers are timed on. Each benchmark is its own module:

    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 .venv/bin/python -m benchmarks.mlx_trainer.speed --model tiny
    LD_PRELOAD=... .venv/bin/python -m benchmarks.mlx_trainer.vs_mlx_lm_lora --rounds 2
    LD_PRELOAD=... .venv/bin/python -m benchmarks.mlx_trainer.quantized --rounds 1
    LD_PRELOAD=... .venv/bin/python -m benchmarks.mlx_trainer.interrupt --tries 4

The runs train with `configs/mlx/chain-sum.toml`, not the embedded default, so that a change of the default run does
not change what these tables measure.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[2]
CHAIN_SUM_CONFIG = ROOT / "configs" / "mlx" / "chain-sum.toml"
SYSTEM_PROMPT = "Reply with only the final number."
SETTINGS = {  # model -> (tasks per step, group size, max new tokens)
    "tiny": (16, 8, 3),
    "smollm2": (4, 4, 16),
}


def model_path(name: str, tmp: Path) -> str:
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model, resolve_model

    if name == "tiny":
        return str(build_tiny_model(tmp / "tiny"))
    return str(resolve_model("smollm2-135m"))


def env_prompts(url: str, tokenizer, n: int, system_prompt: str) -> list[list[int]]:
    """The prompts the trainer builds: real observations of the environment, chat-templated."""
    import asyncio

    from openenv_prime.client import EpisodeSession
    from openenv_prime.mlx_trainer.rollouts.generation import render_prompt
    from openenv_prime.mlx_trainer.rollouts.runner import Renderer

    renderer = Renderer(tokenizer, system_prompt, action_field="answer")  # chain_sum's one action field

    async def observations():
        out = []
        async with EpisodeSession(url) as s:
            for i in range(n):
                out.append((await s.reset(split="train", index=i % 20)).observation)
        return out

    return [render_prompt(tokenizer, renderer.messages(o)) for o in asyncio.run(observations())]


def chain_sum_config() -> dict:
    """`configs/mlx/chain-sum.toml` as a dict, for the benchmarks to adjust."""
    from openenv_prime.mlx_trainer.config import load_config

    return load_config(CHAIN_SUM_CONFIG).model_dump()


def run_training(model: str, url: str, steps: int, out: Path, family_field: str = "tier", prefetch: bool = True,
                 max_sessions: int = 64) -> Path:
    """A short curriculum run without evals on `configs/mlx/chain-sum.toml`'s settings (the tiny model's for "level")."""
    from openenv_prime.mlx_trainer.config import config_from_dict
    from openenv_prime.mlx_trainer.training.loop import train

    tiny = family_field == "level"
    tasks, group, new = SETTINGS["tiny" if tiny else "smollm2"]
    data = chain_sum_config()
    if tiny:
        data["lora"]["layers"] = -1
        data["grpo"].update(learning_rate=3e-4, system_prompt="")
        data["environment"]["check_reset"] = False  # every "say 7" task starts alike, as it should
    data["environment"]["family_field"] = family_field
    data.update(seed=0, steps=steps, plot=False)
    data["model"]["path"] = model
    data["grpo"].update(tasks_per_step=tasks, group_size=group, max_new_tokens=new)
    data["sampler"] = {"name": "curriculum", "kwargs": {}}
    data["environment"].update(base_url=url, prefetch=prefetch, max_sessions=max_sessions)
    data["eval"].update(enabled=False)
    train(config_from_dict(data), out, progress=False)
    return out


@contextlib.contextmanager
def environment(model: str, tmp: Path):
    """SmolLM2 on chain_sum; the tiny model in `tiny_world` ("say 7") after a format warm start, so that its
    groups have signal and the training phase is really exercised.
    Yields (model path, server URL, family field, system prompt)."""
    from openenv_prime.envs.launch import local_server

    if model == "tiny":
        from benchmarks.mlx_trainer.tiny_world import VOCAB, format_warm_start, tiny_world_server
        from openenv_prime.mlx_trainer.model.sources import build_tiny_model

        path = format_warm_start(build_tiny_model(tmp / "tiny", vocab=VOCAB), tmp / "warm")
        with tiny_world_server(tmp) as url:
            yield str(path), url, "level", ""
    else:
        with local_server("chain-sum", tiers=5, max_sessions=64) as url:
            yield model_path(model, tmp), url, "tier", SYSTEM_PROMPT


def shared_batch(path: Path, tasks: int, group: int, new_tokens: int, seed: int) -> dict:
    """A fixed batch to time trainers on: chain_sum prompts as the trainer renders them, completions sampled
    once by SmolLM2, rewards alternating 1/0 inside each group so that every group carries signal."""
    import mlx.core as mx
    from mlx_lm import load

    from openenv_prime.envs.launch import local_server
    from openenv_prime.mlx_trainer.rollouts.generation import generate
    from openenv_prime.mlx_trainer.training.grpo import group_advantages

    model_dir = model_path("smollm2", path)
    model, tok = load(model_dir)
    with local_server("chain-sum", tiers=5, max_sessions=8) as url:
        prompts = env_prompts(url, tok, tasks, SYSTEM_PROMPT)
    mx.random.seed(seed)
    expanded = [p for p in prompts for _ in range(group)]
    completions = generate(model, tok, expanded, max_tokens=new_tokens, temperature=1.0)
    advantages = []
    for _ in prompts:
        advantages += group_advantages([float(i % 2) for i in range(group)])
    return {"model": model_dir, "prompts": prompts, "group": group, "max_tokens": new_tokens,
            "completions": [c.tokens for c in completions], "advantages": advantages,
            "pad": tok.pad_token_id if tok.pad_token_id is not None else 0}
