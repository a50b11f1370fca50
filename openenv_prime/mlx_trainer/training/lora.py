"""LoRA adapters on an mlx_lm model: wrap, switch off for the reference policy, save and load.

Only the adapter tensors (``lora_a``/``lora_b``, and DoRA's magnitudes ``m``) are trainable; the base
weights stay frozen, so the base model with every LoRA scale at 0 (and every DoRA magnitude back at
its base row norm) is the KL reference without a second copy in memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

from openenv_prime.mlx_trainer.config import LoRAConfig


def apply_lora(model: nn.Module, cfg: LoRAConfig) -> None:
    """Freeze the model, then wrap the Linear layers of its last ``cfg.layers`` blocks (all if -1)."""
    from mlx_lm.tuner.utils import linear_to_lora_layers

    num_blocks = len(model.layers)
    layers = num_blocks if cfg.layers == -1 else cfg.layers
    if layers > num_blocks:
        raise ValueError(f"lora.layers = {cfg.layers} but the model has only {num_blocks} blocks; use -1 or at most {num_blocks}")
    model.freeze()
    spec = {"rank": cfg.rank, "scale": cfg.scale, "dropout": cfg.dropout}
    if cfg.keys:
        spec["keys"] = set(cfg.keys)
    linear_to_lora_layers(model, layers, spec, use_dora=cfg.dora)
    if not lora_modules(model):
        raise ValueError(f"lora.keys = {cfg.keys} matched no Linear layer of the model; check the module paths")


def lora_modules(model: nn.Module) -> list[nn.Module]:
    from mlx_lm.tuner.dora import DoRAEmbedding, DoRALinear
    from mlx_lm.tuner.lora import LoRAEmbedding, LoRALinear, LoRASwitchLinear

    kinds = (LoRALinear, LoRASwitchLinear, LoRAEmbedding, DoRALinear, DoRAEmbedding)
    return [m for _, m in model.named_modules() if isinstance(m, kinds)]


@contextmanager
def lora_disabled(model: nn.Module) -> Iterator[None]:
    """Run the base model (the KL reference) by setting every LoRA scale to 0 for the block; DoRA
    layers also get their magnitude reset to the base weight's row norms, which DoRA starts from."""
    modules = lora_modules(model)
    scales = [m.scale for m in modules]
    magnitudes = {i: m.m for i, m in enumerate(modules) if _is_dora_linear(m)}
    for i, m in enumerate(modules):
        m.scale = 0.0
        if i in magnitudes:
            m.m = mx.linalg.norm(m._dequantized_weight().astype(mx.float32), axis=1)
    try:
        yield
    finally:
        for i, (m, s) in enumerate(zip(modules, scales)):
            m.scale = s
            if i in magnitudes:
                m.m = magnitudes[i]


def _is_dora_linear(module: nn.Module) -> bool:
    from mlx_lm.tuner.dora import DoRALinear

    return isinstance(module, DoRALinear)


def adapter_weights(model: nn.Module) -> dict[str, mx.array]:
    return dict(tree_flatten(model.trainable_parameters()))


def save_adapters(model: nn.Module, path: Path) -> None:
    mx.save_safetensors(str(path), adapter_weights(model), metadata={"format": "mlx"})


def load_adapters(model: nn.Module, path: Path) -> None:
    weights = mx.load(str(path))
    expected = set(adapter_weights(model))
    if set(weights) != expected:
        missing, extra = sorted(expected - set(weights))[:3], sorted(set(weights) - expected)[:3]
        raise ValueError(f"adapter file {path} does not match the LoRA config (missing {missing}, unexpected {extra}); resume with the run's own config.toml")
    model.load_weights(list(weights.items()), strict=False)
