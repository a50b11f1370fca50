"""`openenv-prime export`: a tiny run trained through a real OpenEnv server is fused into a model
directory that plain mlx_lm loads and that answers exactly like the run's LoRA model."""

from __future__ import annotations

import subprocess
import sys

import pytest

from trainer_helpers import SMALL_VOCAB, format_sft_model, toy_server

from openenv_prime.mlx_trainer.config import config_from_dict
from openenv_prime.mlx_trainer.training.loop import train


@pytest.mark.parametrize("options", [
    {}, pytest.param({"lora": {"dora": True}, "model": {"quantize_bits": 8, "quantize_group_size": 32}}, marks=pytest.mark.slow),
], ids=["lora-f32", "dora-q8"])
def test_exported_run_loads_in_mlx_lm_and_matches_the_adapters(tmp_path, options):
    import mlx.core as mx
    from mlx_lm import generate, load

    from openenv_prime.mlx_trainer.model.sources import build_tiny_model, load_base
    from openenv_prime.mlx_trainer.training.checkpoint import latest_checkpoint
    from openenv_prime.mlx_trainer.training.lora import apply_lora, load_adapters

    # format-SFT'd so that groups differ from step 1 and the adapters really move
    base = format_sft_model(build_tiny_model(tmp_path / "random", vocab=SMALL_VOCAB), tmp_path / "base", ["say 7:"])
    data = {
        "steps": 3, "plot": False, "model": {"path": str(base), **options.get("model", {})},
        "lora": {"rank": 4, "layers": -1, **options.get("lora", {})},
        "grpo": {"group_size": 4, "tasks_per_step": 4, "max_new_tokens": 3, "learning_rate": 3e-2},
        "environment": {"family_field": "level"}, "eval": {"enabled": False},
    }
    with toy_server("0") as (url, _):
        data["environment"]["base_url"] = url
        config = config_from_dict(data)
        run = tmp_path / "run"
        train(config, run, progress=False)
    out = tmp_path / "fused"
    done = subprocess.run([sys.executable, "-m", "openenv_prime", "export", str(run), "--out", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (out / "config.json").is_file() and list(out.glob("*.safetensors"))

    fused, tok = load(str(out))  # plain mlx_lm, no adapters
    model, _ = load_base(str(base), config.model.quantize_bits, config.model.quantize_group_size)
    apply_lora(model, config.lora)
    load_adapters(model, latest_checkpoint(run) / "adapters.safetensors")
    plain, _ = load(str(base))
    ids = mx.array([tok.encode("say 7:", add_special_tokens=False)])
    tol = 1e-4 if not options else 0.1  # a quantized base is re-quantized after fusing
    assert mx.allclose(fused(ids), model(ids), atol=tol).item()
    assert not mx.allclose(fused(ids), plain(ids), atol=1e-3).item()  # the adapters are in the weights
    assert isinstance(generate(fused, tok, "say 7:", max_tokens=3), str)

    again = subprocess.run([sys.executable, "-m", "openenv_prime", "export", str(run), "--out", str(out)],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 2 and "not an empty directory" in again.stderr
