"""The model being trained as an eval `Policy`: greedy replies, generated in one batch."""

from __future__ import annotations

from typing import Any

import mlx.nn as nn

from openenv_prime.evaluation.policy import Reply
from openenv_prime.mlx_trainer.rollouts.generation import generate, render_prompt
from openenv_prime.mlx_trainer.worker import MainThreadMLX


class TrainerPolicy:
    def __init__(self, model: nn.Module, tokenizer: Any, max_new_tokens: int, mlx: MainThreadMLX):
        self.mlx = mlx
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens

    async def complete(self, prompts: list[list[dict]]) -> list[Reply]:
        ids = [render_prompt(self.tokenizer, messages) for messages in prompts]
        completions = await self.mlx.run(generate, self.model, self.tokenizer, ids,
                                         max_tokens=self.max_new_tokens, temperature=0.0,
                                         stop=self.mlx.stopping)
        return [Reply(c.text, len(c.tokens)) for c in completions]
