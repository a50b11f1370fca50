"""The model the trainer trains: loaded with mlx_lm, LoRA-wrapped, in eval mode, with its optimizer.

mlx_lm creates LoRA layers in training mode, so with ``lora.dropout > 0`` dropout would act while sampling,
in the old log-probs and in the greedy evals. The model stays in eval mode; only the loss switches it to
training mode (``grpo.train_on_batch``).
"""

from __future__ import annotations

from typing import Any

from openenv_prime.mlx_trainer.checkpoint import seed_step
from openenv_prime.mlx_trainer.config import TrainConfig


def load_trainable(config: TrainConfig) -> tuple[Any, Any, Any]:
    """(model, tokenizer, optimizer) for ``config``, seeded so that the LoRA initialisation repeats."""
    import mlx.optimizers as optim
    from mlx_lm import load

    from openenv_prime.mlx_trainer.lora import apply_lora
    from openenv_prime.mlx_trainer.models import resolve_model

    seed_step(config.seed, 0)
    model, tokenizer = load(str(resolve_model(config.model.path)))
    apply_lora(model, config.lora)
    model.eval()
    optimizer = optim.Adam(learning_rate=config.grpo.learning_rate)
    optimizer.init(model.trainable_parameters())
    return model, tokenizer, optimizer
