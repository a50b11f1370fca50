"""The GRPO objective on LoRA parameters: group-normalised advantages, clipped probability ratio,
and an optional k3-KL penalty against the base model (LoRA switched off).

Log-probs come from a teacher-forced forward pass over prompt + completion with the logits divided
by the sampling temperature, so they are the behaviour policy's log-probs of what was sampled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim

from openenv_prime.mlx_trainer.config import GRPOConfig
from openenv_prime.mlx_trainer.lora import lora_disabled


def group_advantages(rewards: Sequence[float], tolerance: float = 1e-6) -> list[float] | None:
    """(r - mean) / std within one group; None when the rewards do not differ (no learning signal)."""
    n = len(rewards)
    mean = sum(rewards) / n
    std = (sum((r - mean) ** 2 for r in rewards) / n) ** 0.5
    if max(rewards) - min(rewards) <= tolerance or std == 0.0:
        return None
    return [(r - mean) / std for r in rewards]


@dataclass
class Batch:
    inputs: mx.array  # (B, L) prompt + completion without its last token, right-padded
    targets: mx.array  # (B, L) the next token at each position
    mask: mx.array  # (B, L) 1.0 where the target is a generated token
    advantages: mx.array  # (B,)

    @property
    def num_tokens(self) -> int:
        return int(self.mask.sum().item())


def make_batch(
    sequences: Sequence[tuple[list[int], list[int]]],
    advantages: Sequence[float],
    pad_id: int = 0,
    completion_masks: Sequence[Sequence[float]] | None = None,
) -> Batch:
    """Pack (prompt ids, completion ids) pairs for teacher forcing.

    ``completion_masks`` (one 0/1 list per completion, default all 1) marks the completion tokens the loss
    covers: a multi-turn episode's completion holds the observations between replies, masked out with 0.
    """
    if not sequences:
        raise ValueError("make_batch needs at least one (prompt, completion) pair")
    if completion_masks is not None and len(completion_masks) != len(sequences):
        raise ValueError(f"make_batch got {len(completion_masks)} completion masks for {len(sequences)} sequences")
    width = max(len(p) + len(c) for p, c in sequences) - 1
    inputs, targets, mask = [], [], []
    for i, (prompt, completion) in enumerate(sequences):
        if not prompt or not completion:
            raise ValueError("every sequence needs a non-empty prompt and completion")
        covered = [1.0] * len(completion) if completion_masks is None else [float(m) for m in completion_masks[i]]
        if len(covered) != len(completion):
            raise ValueError(f"completion mask {i} has {len(covered)} entries for {len(completion)} completion tokens")
        ids = prompt + completion
        pad = width - (len(ids) - 1)
        inputs.append(ids[:-1] + [pad_id] * pad)
        targets.append(ids[1:] + [pad_id] * pad)
        mask.append([0.0] * (len(prompt) - 1) + covered + [0.0] * pad)
    return Batch(mx.array(inputs), mx.array(targets), mx.array(mask), mx.array(list(advantages), dtype=mx.float32))


def token_logprobs(model: nn.Module, batch: Batch, temperature: float) -> mx.array:
    logits = model(batch.inputs).astype(mx.float32) / temperature
    picked = mx.take_along_axis(logits, batch.targets[..., None], axis=-1)[..., 0]
    return picked - mx.logsumexp(logits, axis=-1)


def grpo_loss(
    model: nn.Module,
    batch: Batch,
    old_lp: mx.array,
    ref_lp: mx.array | None,
    cfg: GRPOConfig,
) -> tuple[mx.array, mx.array]:
    """Mean over sequences of the per-token clipped surrogate (+ beta * k3 KL); returns (loss, mean KL)."""
    lp = token_logprobs(model, batch, cfg.temperature)
    adv = batch.advantages[:, None]
    ratio = mx.exp(lp - old_lp)
    surrogate = mx.minimum(ratio * adv, mx.clip(ratio, 1 - cfg.clip, 1 + cfg.clip) * adv)
    per_token = -surrogate
    if ref_lp is not None:
        kl = mx.exp(ref_lp - lp) - (ref_lp - lp) - 1
        per_token = per_token + cfg.kl_beta * kl
    else:
        kl = mx.zeros_like(lp)
    lengths = mx.maximum(batch.mask.sum(axis=1), 1.0)
    loss = ((per_token * batch.mask).sum(axis=1) / lengths).mean()
    mean_kl = ((kl * batch.mask).sum(axis=1) / lengths).mean()
    return loss, mean_kl


def train_on_batch(model: nn.Module, optimizer: optim.Optimizer, batch: Batch, cfg: GRPOConfig) -> dict[str, float]:
    """``cfg.updates_per_step`` optimizer steps on one batch of rollouts; only LoRA tensors are trainable."""
    old_lp = mx.stop_gradient(token_logprobs(model, batch, cfg.temperature))
    ref_lp = None
    if cfg.kl_beta > 0:
        with lora_disabled(model):
            ref_lp = mx.stop_gradient(token_logprobs(model, batch, cfg.temperature))
    mx.eval(old_lp, ref_lp) if ref_lp is not None else mx.eval(old_lp)

    def loss_fn(m):
        m.train()  # LoRA dropout acts here only: sampling, evals and the old/reference log-probs run in eval mode
        try:
            return grpo_loss(m, batch, old_lp, ref_lp, cfg)
        finally:
            m.eval()

    value_and_grad = nn.value_and_grad(model, loss_fn)
    losses, kls = [], []
    for _ in range(cfg.updates_per_step):
        (loss, kl), grads = value_and_grad(model)
        optimizer.update(model, grads)
        mx.eval(model.trainable_parameters(), optimizer.state, loss, kl)
        losses.append(loss.item())
        kls.append(kl.item())
    return {"loss": sum(losses) / len(losses), "kl": sum(kls) / len(kls)}
