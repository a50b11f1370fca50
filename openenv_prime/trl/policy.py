"""The trainer's own model as an eval policy: greedy replies generated in this process.

Prompts go through the tokenizer's chat template with ``add_generation_prompt=True``, as ``GRPOTrainer`` renders its
training prompts, so an eval asks the model exactly what training asked. Generation runs in a worker thread so the
eval's sockets keep answering the server while the model generates.
"""

from __future__ import annotations

import asyncio
from typing import Any


class TransformersPolicy:
    """:class:`~openenv_prime.evaluation.policy.Policy` over a transformers causal LM (left-padded batches)."""

    def __init__(self, model: Any, tokenizer: Any, *, max_new_tokens: int, batch_size: int = 32,
                 chat_template_kwargs: dict[str, Any] | None = None):
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.chat_template_kwargs = dict(chat_template_kwargs or {})

    async def complete(self, prompts: list[list[dict]]) -> list[str]:
        return await asyncio.to_thread(self.generate, prompts)

    def generate(self, prompts: list[list[dict]]) -> list[str]:
        import torch

        tok = self.tokenizer
        texts = [tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True, **self.chat_template_kwargs)
                 for p in prompts]
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        side, tok.padding_side = tok.padding_side, "left"
        training = self.model.training
        self.model.eval()
        replies: list[str] = []
        try:
            for start in range(0, len(texts), self.batch_size):
                batch = tok(texts[start:start + self.batch_size], return_tensors="pt", padding=True,
                            add_special_tokens=False).to(self.model.device)
                with torch.no_grad():
                    out = self.model.generate(**batch, max_new_tokens=self.max_new_tokens, do_sample=False,
                                              pad_token_id=pad)
                new = out[:, batch["input_ids"].shape[1]:]
                replies += tok.batch_decode(new, skip_special_tokens=True)
        finally:
            tok.padding_side = side
            self.model.train(training)
        return replies
