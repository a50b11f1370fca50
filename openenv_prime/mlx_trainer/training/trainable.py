"""The model the trainer trains: loaded with mlx_lm, LoRA-wrapped, in eval mode, with its optimizer.

mlx_lm creates LoRA layers in training mode, so with ``lora.dropout > 0`` dropout would act while sampling,
in the old log-probs and in the greedy evals. The model stays in eval mode; only the loss switches it to
training mode (``grpo.train_on_batch``).
"""

from __future__ import annotations

from typing import Any

from openenv_prime.mlx_trainer.config import TrainConfig
from openenv_prime.mlx_trainer.training.checkpoint import seed_step


def load_trainable(config: TrainConfig) -> tuple[Any, Any, Any]:
    """(model, tokenizer, optimizer) for ``config``, seeded so that the LoRA initialisation repeats."""
    from openenv_prime.mlx_trainer.model.sources import load_base
    from openenv_prime.mlx_trainer.training.grpo import make_optimizer
    from openenv_prime.mlx_trainer.training.lora import apply_lora

    seed_step(config.seed, 0)
    m = config.model
    model, tokenizer = load_base(m.path, m.quantize_bits, m.quantize_group_size)
    apply_lora(model, config.lora)
    model.eval()
    optimizer = make_optimizer(config.grpo, config.steps)
    optimizer.init(model.trainable_parameters())
    return model, tokenizer, optimizer
