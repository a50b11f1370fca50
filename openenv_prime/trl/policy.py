"""The trainer's own model as an eval policy: greedy replies generated in this process.

Prompts go through the tokenizer's chat template with ``add_generation_prompt=True``, as ``GRPOTrainer`` renders its
training prompts, so an eval asks the model exactly what training asked. In tool mode (``tools``: the methods TRL
declares, with the trainer's chat template) the tools are rendered into every prompt and each reply is parsed into
its tool calls by TRL's own ``parse_response``, as ``GRPOTrainer`` parses its completions: the reply's ``message``
(:class:`ToolCallReply`), which :class:`~openenv_prime.trl.tool_eval.ToolCallAsking` plays. A policy here is a plain function of the
prompts: the eval harness (``EvalHarness.maybe_run``) calls it on the trainer's thread, where the process's device is
set, while the eval's sockets keep answering the server from a thread of their own.

A model sharded across processes (FSDP, DeepSpeed ZeRO-3) needs every process in every forward pass, so its
processes must call ``generate`` equally often: :class:`Lockstep` makes them, as TRL's own generation does (and
transformers' ``generate`` keeps their decoding steps equal, ``synced_gpus``).
"""

from __future__ import annotations

import math
from typing import Any

from openenv_prime.evaluation.policy import Reply
from openenv_prime.trl.replicas import Replicas

_FILLER = [{"role": "user", "content": ""}]


class ToolCallReply(Reply):
    """A reply and the assistant message TRL's parser read out of it (``tool_calls`` where it made any)."""

    message: dict[str, Any]

    def __new__(cls, text: str, tokens: int | None, message: dict[str, Any]) -> "ToolCallReply":
        reply = super().__new__(cls, text, tokens)
        reply.message = message
        return reply
"""The prompt a process generates for when it has fewer batches than another in a lockstep round."""


class TransformersPolicy:
    """:class:`~openenv_prime.evaluation.policy.Policy` over a transformers causal LM (left-padded batches)."""

    def __init__(self, model: Any, tokenizer: Any, *, max_new_tokens: int, batch_size: int = 32,
                 chat_template_kwargs: dict[str, Any] | None = None, tools: list | None = None,
                 chat_template: str | None = None):
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.batch_size = batch_size
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.tools = list(tools or []) or None  # None, not []: a Llama template renders tool boilerplate for []
        if self.tools is not None:
            self.chat_template_kwargs.update(tools=self.tools, chat_template=chat_template)

    def __call__(self, prompts: list[list[dict]]) -> list[Reply]:
        return self.generate(prompts)

    def batches(self, prompts: int) -> int:
        """How many ``generate`` calls ``prompts`` prompts take."""
        return math.ceil(prompts / self.batch_size)

    def generate(self, prompts: list[list[dict]], *, batches: int | None = None) -> list[Reply]:
        """Greedy replies to ``prompts`` (with the tokens each generated); ``batches``: call the model that many times, the calls past the prompts'
        own on a filler prompt whose reply is dropped (see :class:`Lockstep`)."""
        import torch

        tok = self.tokenizer
        texts = [tok.apply_chat_template(p, tokenize=False, add_generation_prompt=True, **self.chat_template_kwargs)
                 for p in prompts]
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        side, tok.padding_side = tok.padding_side, "left"
        training = self.model.training
        self.model.eval()
        replies: list[Reply] = []
        chunks = [texts[start:start + self.batch_size] for start in range(0, len(texts), self.batch_size)]
        filler = tok.apply_chat_template(_FILLER, tokenize=False, add_generation_prompt=True, **self.chat_template_kwargs)
        chunks += [None] * ((batches or 0) - len(chunks))
        try:
            for chunk in chunks:
                batch = tok(chunk or [filler], return_tensors="pt", padding=True,
                            add_special_tokens=False).to(self.model.device)
                with torch.no_grad():
                    out = self.model.generate(**batch, max_new_tokens=self.max_new_tokens, do_sample=False,
                                              pad_token_id=pad)
                if chunk is not None:
                    generated = out[:, batch["input_ids"].shape[1]:].tolist()
                    decoded = tok.batch_decode(generated, skip_special_tokens=True)
                    replies += [self._reply(text, ids[:_length(ids, tok.eos_token_id)], prompt)
                                for text, ids, prompt in zip(decoded, generated, chunk)]
        finally:
            tok.padding_side = side
            self.model.train(training)
        return replies


    def _reply(self, text: str, ids: list[int], prompt: str) -> Reply:
        """The reply (tokens up to and including the end of sequence); in tool mode with the message TRL's parser
        reads out of those tokens, after the prompt's."""
        if self.tools is None:
            return Reply(text, len(ids))
        from trl.chat_template_utils import parse_response

        prefix = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        return ToolCallReply(text, len(ids), parse_response(self.tokenizer, ids, prefix=prefix, tools=self.tools))


def _length(ids: list[int], eos: int | None) -> int:
    """Tokens generated up to and including the first end of sequence (the rest is padding)."""
    return ids.index(eos) + 1 if eos in ids else len(ids)


class Lockstep:
    """An eval policy and the eval's :class:`~openenv_prime.evaluation.harness.Shards` in one, for a model sharded
    across processes: every process plays its share of the eval's tasks, and in each round of model calls each
    process generates as many batches as the process with the most prompts; a process whose share is done keeps
    joining rounds (on filler prompts) until every share is, and only then are the shares gathered."""

    def __init__(self, policy: TransformersPolicy, replicas: Replicas):
        self.policy = policy
        self.replicas = replicas
        self.index = replicas.index
        self.count = replicas.count

    def __call__(self, prompts: list[list[dict]]) -> list[str]:
        if not prompts:
            return []
        counts = self.replicas.exchange("the eval's model calls in lockstep", lambda: len(prompts))
        return self.policy.generate(prompts, batches=self.policy.batches(max(counts)))

    def gather(self, items: list) -> list:
        """Join the rounds of the processes still playing, then gather ``items`` from every process."""
        while True:
            counts = self.replicas.exchange("the eval's model calls in lockstep", lambda: 0)
            if not any(counts):
                break
            self.policy.generate([], batches=self.policy.batches(max(counts)))
        return self.replicas.gather(items)
