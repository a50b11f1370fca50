"""The GRPO objective on LoRA parameters: group-normalised advantages, clipped probability ratio,
and an optional k3-KL penalty against the base model (LoRA switched off).

Log-probs come from a teacher-forced forward pass over prompt + completion with the logits divided
by the sampling temperature, so they are the behaviour policy's log-probs of what was sampled.

Speed: the vocabulary projection and its normalisation (about a fifth of SmolLM2's forward pass per
position) run only over the columns that hold completion tokens, and with one update per step the
"old" log-probs are the same pass under ``stop_gradient`` (the ratio is exactly 1 there), so a step
costs one forward and one backward pass, plus one forward for the KL reference when ``kl_beta > 0``.

Loss variants (``grpo.loss``): ``grpo`` averages each sequence's token terms, then the sequences;
``dapo`` averages over all completion tokens of the batch; ``dr_grpo`` (Dr. GRPO) sums token terms
over ``B * max_new_tokens`` and uses unscaled advantages ``r - mean``; ``gspo`` clips one
sequence-level ratio ``exp(mean token log-ratio)`` per sequence. ``grpo.clip_high`` is DAPO's
asymmetric upper clip. ``grpo.gradient_accumulation`` splits a step's batch into that many
micro-batches with one optimizer update, each micro-batch normalised by the whole batch's
denominator so the update equals the unsplit one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import mlx.core as mx
import mlx.nn as nn
import mlx.optimizers as optim
from mlx.utils import tree_map

from openenv_prime.mlx_trainer.config import GRPOConfig
from openenv_prime.mlx_trainer.training.lora import lora_disabled


def group_advantages(rewards: Sequence[float], tolerance: float = 1e-6, scale: bool = True) -> list[float] | None:
    """(r - mean) / std within one group (``scale=False``: r - mean, Dr. GRPO); None when the
    rewards do not differ (no learning signal)."""
    n = len(rewards)
    mean = sum(rewards) / n
    std = (sum((r - mean) ** 2 for r in rewards) / n) ** 0.5
    if max(rewards) - min(rewards) <= tolerance or std == 0.0:
        return None
    return [(r - mean) / std if scale else r - mean for r in rewards]


@dataclass
class Batch:
    inputs: mx.array  # (B, L) prompt + completion without its last token, right-padded
    targets: mx.array  # (B, L) the next token at each position
    mask: mx.array  # (B, L) 1.0 where the target is a generated token
    advantages: mx.array  # (B,)

    @property
    def num_tokens(self) -> int:
        return int(self.mask.sum().item())

    def rows(self, start: int, stop: int) -> "Batch":
        return Batch(self.inputs[start:stop], self.targets[start:stop], self.mask[start:stop], self.advantages[start:stop])


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


def _span(mask: mx.array) -> tuple[int, int]:
    """First and one-past-last column where any row has a trained token."""
    cols = mx.max(mask, axis=0) > 0
    width = cols.shape[0]
    first = int(mx.argmax(cols).item())
    last = width - int(mx.argmax(cols[::-1]).item())
    return first, max(last, first + 1)


# mlx_lm architectures whose Model.__call__ is exactly trunk -> lm_head (or the tied embedding); others
# (logit soft-capping, scaling) take the full forward pass and are sliced afterwards.
_PLAIN_HEAD = frozenset({"llama", "mistral", "qwen2", "qwen3", "smollm3", "phi3"})


def _logits(model: nn.Module, inputs: mx.array, start: int) -> mx.array:
    """Logits for positions ``start:`` only; for plain architectures the hidden states of earlier
    positions never meet the vocabulary projection."""
    trunk = getattr(model, "model", None)
    head = getattr(model, "lm_head", None)
    tied = getattr(getattr(model, "args", None), "tie_word_embeddings", False)
    plain = getattr(model, "model_type", None) in _PLAIN_HEAD
    if plain and trunk is not None and callable(trunk) and (head is not None or tied):
        try:
            hidden = trunk(inputs)[:, start:]
        except TypeError:
            return model(inputs)[:, start:]
        return trunk.embed_tokens.as_linear(hidden) if head is None else head(hidden)
    return model(inputs)[:, start:]


def completion_logprobs(model: nn.Module, batch: Batch, temperature: float) -> tuple[mx.array, mx.array, mx.array]:
    """(log-probs, targets mask, column offset) over the completion span only: (B, C) arrays."""
    start, stop = _span(batch.mask)
    logits = _logits(model, batch.inputs[:, :stop], start).astype(mx.float32)
    if temperature != 1.0:
        logits = logits * (1.0 / temperature)
    targets = batch.targets[:, start:stop]
    picked = mx.take_along_axis(logits, targets[..., None], axis=-1)[..., 0]
    return picked - mx.logsumexp(logits, axis=-1), batch.mask[:, start:stop], mx.array(start)


def token_logprobs(model: nn.Module, batch: Batch, temperature: float) -> mx.array:
    """(B, L) log-probs of the targets; exact where ``batch.mask`` is 1, zero left of the completion span."""
    lp, _, start = completion_logprobs(model, batch, temperature)
    left = int(start.item())
    right = batch.mask.shape[1] - left - lp.shape[1]
    return mx.pad(lp, [(0, 0), (left, right)])


def loss_denominator(batch: Batch, cfg: GRPOConfig) -> float:
    """What the summed per-sequence terms of a whole batch are divided by (so micro-batches add up)."""
    rows = batch.mask.shape[0]
    if cfg.loss == "dapo":
        return max(float(batch.mask.sum().item()), 1.0)
    if cfg.loss == "dr_grpo":
        return float(rows * cfg.max_new_tokens)
    return float(rows)


def grpo_loss(
    model: nn.Module,
    batch: Batch,
    old_lp: mx.array | None,
    ref_lp: mx.array | None,
    cfg: GRPOConfig,
    denominator: float | None = None,
) -> tuple[mx.array, mx.array]:
    """The clipped surrogate (+ beta * k3 KL) in the variant ``cfg.loss``; returns (loss, mean KL).

    ``old_lp`` None means on-policy (one update per step): the ratio is this pass's log-probs under
    ``stop_gradient``, which equals 1 but keeps the policy gradient. ``old_lp`` and ``ref_lp`` are
    over the completion span, as ``completion_logprobs`` returns them."""
    lp, mask, _ = completion_logprobs(model, batch, cfg.temperature)
    if old_lp is None:
        old_lp = mx.stop_gradient(lp)
    adv = batch.advantages[:, None]
    high = cfg.clip if cfg.clip_high is None else cfg.clip_high
    lengths = mx.maximum(mask.sum(axis=1), 1.0)
    log_ratio = (lp - old_lp) * mask
    if cfg.loss == "gspo":
        log_ratio = (log_ratio.sum(axis=1) / lengths)[:, None]
    ratio = mx.exp(log_ratio)
    surrogate = mx.minimum(ratio * adv, mx.clip(ratio, 1 - cfg.clip, 1 + high) * adv)
    per_token = -surrogate * mask  # gspo: one ratio per sequence, the same term on each of its tokens
    if ref_lp is not None:
        kl = mx.exp(ref_lp - lp) - (ref_lp - lp) - 1
        per_token = per_token + cfg.kl_beta * kl * mask
    else:
        kl = mx.zeros_like(lp)
    if cfg.loss in ("grpo", "gspo"):
        per_sequence = per_token.sum(axis=1) / lengths
    else:
        per_sequence = per_token.sum(axis=1)
    denominator = denominator if denominator is not None else loss_denominator(batch, cfg)
    loss = per_sequence.sum() / denominator
    mean_kl = ((kl * mask).sum(axis=1) / lengths).mean()
    return loss, mean_kl


def make_optimizer(cfg: GRPOConfig, steps: int) -> optim.Optimizer:
    """Adam with ``grpo.lr_schedule`` over the run's optimizer updates (linear warm-up first)."""
    updates = max(1, steps * cfg.updates_per_step)
    lr = cfg.learning_rate
    warmup = min(cfg.warmup_steps, updates)
    rest = max(1, updates - warmup - 1)  # the last update runs at the schedule's end value
    if cfg.lr_schedule == "cosine":
        main = optim.cosine_decay(lr, rest, lr * cfg.min_lr_ratio)
    elif cfg.lr_schedule == "linear":
        main = optim.linear_schedule(lr, lr * cfg.min_lr_ratio, rest)
    else:
        main = lr
    if warmup > 0:
        ramp = optim.linear_schedule(lr / (warmup + 1), lr, warmup)
        schedule = optim.join_schedules([ramp, main if callable(main) else (lambda _: mx.array(lr))], [warmup])
    else:
        schedule = main
    return optim.Adam(learning_rate=schedule)


def train_on_batch(model: nn.Module, optimizer: optim.Optimizer, batch: Batch, cfg: GRPOConfig) -> dict[str, float]:
    """``cfg.updates_per_step`` optimizer steps on one batch of rollouts; only LoRA tensors are trainable."""
    chunks = _micro_batches(batch, cfg.gradient_accumulation)
    denominator = loss_denominator(batch, cfg)
    ref = [None] * len(chunks)
    if cfg.kl_beta > 0:
        with lora_disabled(model):
            ref = [mx.stop_gradient(completion_logprobs(model, c, cfg.temperature)[0]) for c in chunks]
        mx.eval(ref)
    old = [None] * len(chunks)
    if cfg.updates_per_step > 1:  # off-policy after the first update: keep the sampling policy's log-probs
        old = [mx.stop_gradient(completion_logprobs(model, c, cfg.temperature)[0]) for c in chunks]
        mx.eval(old)

    def loss_fn(m, *args):
        m.train()  # LoRA dropout acts here only: sampling, evals and the old/reference log-probs run in eval mode
        try:
            return grpo_loss(m, *args)
        finally:
            m.eval()

    value_and_grad = nn.value_and_grad(model, loss_fn)
    losses, kls = [], []
    for _ in range(cfg.updates_per_step):
        loss_sum, kl_sum, grads = 0.0, 0.0, None
        for chunk, old_lp, ref_lp in zip(chunks, old, ref):
            (loss, kl), g = value_and_grad(model, chunk, old_lp, ref_lp, cfg, denominator)
            grads = g if grads is None else tree_map(lambda a, b: a + b, grads, g)
            if len(chunks) > 1:
                mx.eval(grads, loss, kl)  # free this micro-batch's activations before the next
            loss_sum += loss
            kl_sum += kl * chunk.mask.shape[0]
        optimizer.update(model, grads)
        mx.eval(model.trainable_parameters(), optimizer.state, loss_sum, kl_sum)
        losses.append(float(loss_sum.item()))
        kls.append(float(kl_sum.item()) / batch.mask.shape[0])
    return {"loss": sum(losses) / len(losses), "kl": sum(kls) / len(kls)}


def _micro_batches(batch: Batch, parts: int) -> list[Batch]:
    rows = batch.mask.shape[0]
    parts = max(1, min(parts, rows))
    size = math.ceil(rows / parts)
    return [batch.rows(i, min(i + size, rows)) for i in range(0, rows, size)]
