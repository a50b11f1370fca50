"""Batched sampling with token ids kept, for training on exactly what was generated.

A thin driver of mlx_lm's ``BatchGenerator`` (the engine behind ``batch_generate``) that keeps the
stop token: ``batch_generate`` drops EOS from the returned ids, but GRPO must train the decision to
stop, so a sequence that stopped on EOS keeps it as its last token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mlx.nn as nn


@dataclass(frozen=True)
class Completion:
    tokens: list[int]  # generated ids, EOS included when the sequence stopped on it
    text: str  # decoded reply without the EOS
    stopped: bool  # True when it ended on EOS, False when it hit max_tokens


def render_prompt(tokenizer: Any, messages: list[dict]) -> list[int]:
    """Chat-template the messages (generation prompt added); plain concatenation when the tokenizer has no template."""
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    else:
        text = "\n".join(m["content"] for m in messages)
    return list(tokenizer.encode(text, add_special_tokens=False))


def generate(
    model: nn.Module,
    tokenizer: Any,
    prompts: list[list[int]],
    *,
    max_tokens: int,
    temperature: float,
) -> list[Completion]:
    """Sample one completion per prompt, all in one batch; temperature 0 is greedy."""
    from mlx_lm.generate import BatchGenerator
    from mlx_lm.sample_utils import make_sampler

    if not prompts:
        return []
    eos = set(tokenizer.eos_token_ids)
    gen = BatchGenerator(
        model,
        stop_tokens=[[t] for t in sorted(eos)],
        sampler=make_sampler(temp=temperature),
        completion_batch_size=len(prompts),
        prefill_batch_size=len(prompts),
    )
    try:
        uids = gen.insert(prompts, [max_tokens] * len(prompts))
        tokens: dict[int, list[int]] = {uid: [] for uid in uids}
        stopped: dict[int, bool] = {}
        while responses := gen.next_generated():
            for r in responses:
                tokens[r.uid].append(r.token)
                if r.finish_reason is not None:
                    stopped[r.uid] = r.finish_reason == "stop"
    finally:
        gen.close()
    out = []
    for uid in uids:
        ids = tokens[uid]
        stop = stopped.get(uid, False)
        out.append(Completion(ids, tokenizer.decode(ids[:-1] if stop else ids), stop))
    return out
