"""The MLX benchmarks (benchmarks/mlx_trainer/) build their batches and runs with the trainer's own parts: a change
there must not break them silently. (The studies of real MLX runs, studies/mlx_runs/, are tested in tests/studies/.)"""

from __future__ import annotations

import pathlib
import sys

from tests.support.waiting import HANG_GUARD_S

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks" / "mlx_trainer"


def test_env_prompts_are_chat_templated_observations(tiny_model_dir, chain_sum_server):
    from mlx_lm import load

    from benchmarks.mlx_trainer import common  # imported in the test, not at collection: it sets HF_HUB_OFFLINE

    _, tokenizer = load(str(tiny_model_dir))
    prompts = common.env_prompts(chain_sum_server, tokenizer, 3, "Answer with the number.")
    assert len(prompts) == 3 and all(isinstance(t, int) for p in prompts for t in p)
    assert len({tuple(p) for p in prompts}) == 3  # three tasks, three questions
    assert all(len(p) > 20 for p in prompts)


def test_each_benchmark_module_starts():
    """Each benchmark is a module run from the repository root (`python -m benchmarks.mlx_trainer.NAME --help`)."""
    import subprocess

    names = {path.stem for path in BENCHMARKS.glob("*.py")} - {"__init__", "common", "tiny_world"}
    assert names == {"speed", "interrupt", "vs_mlx_lm_lora", "quantized", "blas"}
    for name in sorted(names):
        done = subprocess.run([sys.executable, "-m", f"benchmarks.mlx_trainer.{name}", "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=HANG_GUARD_S)
        assert done.returncode == 0 and "usage:" in done.stdout, f"{name}: {done.stderr[-1000:]}"


def test_benchmark_runs_train_on_the_chain_sum_config_not_the_default():
    """The benchmarks' tables stay comparable when the embedded default changes: they read configs/mlx/chain-sum.toml."""
    from benchmarks.mlx_trainer import common
    from openenv_prime.mlx_trainer.config import config_from_dict

    config = config_from_dict(common.chain_sum_config())
    assert config.environment.embedded == "chain-sum" and config.environment.family_field == "tier"
    assert config.grpo.system_prompt == common.SYSTEM_PROMPT


def test_the_tiny_world_pays_only_for_seven(tmp_path):
    """`speed --model tiny`'s game, served as a user's environment: tasks carry their family, "7" is right."""
    import asyncio

    from benchmarks.mlx_trainer.tiny_world import TRAIN_TASKS, tiny_world_server
    from openenv_prime.client import EpisodeSession, TaskAPIClient

    async def play(url: str, answer: str) -> tuple[str, float | None, bool]:
        async with EpisodeSession(url) as session:
            first = await session.reset(split="train", index=TRAIN_TASKS - 1)
            last = await session.step({"answer": answer})
        return first.observation["question"], last.reward, last.done

    with tiny_world_server(tmp_path) as url:
        specs = TaskAPIClient(url).tasks("train")
        assert len(specs) == TRAIN_TASKS and {spec["level"] for spec in specs} == {0}
        assert asyncio.run(play(url, "7")) == ("say 7:", 1.0, True)
        assert asyncio.run(play(url, "3")) == ("say 7:", 0.0, True)
