"""benchmarks/bench_mlx.py builds its batches with the trainer's own parts: a change there must not break it silently."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "bench_mlx.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_mlx", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_mlx"] = module
    spec.loader.exec_module(module)
    return module


def test_env_prompts_are_chat_templated_observations(tiny_model_dir, chain_sum_server):
    from mlx_lm import load

    _, tokenizer = load(str(tiny_model_dir))
    prompts = _bench().env_prompts(chain_sum_server, tokenizer, 3, "Answer with the number.")
    assert len(prompts) == 3 and all(isinstance(t, int) for p in prompts for t in p)
    assert len({tuple(p) for p in prompts}) == 3  # three tasks, three questions
    assert all(len(p) > 20 for p in prompts)
