"""Batched sampling with token ids kept, for training on exactly what was generated.

A thin driver of mlx_lm's ``BatchGenerator`` (the engine behind ``batch_generate``) that keeps the
stop token: ``batch_generate`` drops EOS from the returned ids, but GRPO must train the decision to
stop, so a sequence that stopped on EOS keeps it as its last token.

A GRPO group asks for G completions of one prompt. Each distinct prompt that occurs more than once
is prefilled once (all but its last token, into a KV cache); every rollout of it starts from a fork
of that cache whose arrays are shared (the generator copies them into its batch cache, never writes
them), so prefill work drops by the group size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import mlx.nn as nn


class GenerationStopped(RuntimeError):
    """``generate`` was asked to stop (Ctrl-C): its batch is dropped, so a step it served leaves no trace."""


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
    stop: Callable[[], bool] | None = None,
) -> list[Completion]:
    """Sample one completion per prompt, all in one batch; temperature 0 is greedy.

    ``stop`` is asked after every token: when it says True the batch is dropped (:class:`GenerationStopped`),
    so that Ctrl-C during a long generation waits for one token, not for the whole batch.
    """
    from mlx_lm.generate import BatchGenerator
    from mlx_lm.sample_utils import make_sampler

    if not prompts:
        return []
    eos = set(tokenizer.eos_token_ids)
    inputs, caches, histories = shared_prefixes(model, prompts)
    gen = BatchGenerator(
        model,
        stop_tokens=[[t] for t in sorted(eos)],
        sampler=make_sampler(temp=temperature),
        completion_batch_size=len(prompts),
        prefill_batch_size=len(prompts),
    )
    try:
        uids = gen.insert(inputs, [max_tokens] * len(prompts), caches=caches, all_tokens=histories)
        tokens: dict[int, list[int]] = {uid: [] for uid in uids}
        stopped: dict[int, bool] = {}
        while responses := gen.next_generated():
            if stop is not None and stop():
                raise GenerationStopped(f"generation stopped after {max(map(len, tokens.values()))} of {max_tokens} tokens")
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


def shared_prefixes(model: nn.Module, prompts: list[list[int]]) -> tuple[list[list[int]], list, list[list[int]]]:
    """(what to insert, caches, token histories) for ``BatchGenerator.insert``: a prompt that occurs more
    than once is prefilled once and each occurrence gets a fork of its cache plus its last token; a
    prompt that occurs once goes in whole with a fresh cache (None)."""
    import mlx.core as mx
    from mlx_lm.models.cache import make_prompt_cache

    counts: dict[tuple[int, ...], int] = {}
    for p in prompts:
        counts[tuple(p)] = counts.get(tuple(p), 0) + 1
    templates: dict[tuple[int, ...], list] = {}
    for key, n in counts.items():
        if n < 2 or len(key) < 2:
            continue
        cache = make_prompt_cache(model)
        if not all(hasattr(c, "keys") for c in cache):
            return [list(p) for p in prompts], [None] * len(prompts), [[] for _ in prompts]  # no forkable KV cache
        model(mx.array([key[:-1]]), cache=cache)
        mx.eval([c.state for c in cache])
        templates[key] = cache
    inputs, caches, histories = [], [], []
    for p in prompts:
        template = templates.get(tuple(p))
        if template is None:
            inputs.append(list(p))
            caches.append(None)
            histories.append([])
            continue
        fork = make_prompt_cache(model)
        for target, source in zip(fork, template):
            target.state = source.state
        inputs.append(list(p[-1:]))
        caches.append(fork)
        histories.append(list(p[:-1]))
    return inputs, caches, histories
