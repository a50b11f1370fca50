"""A multi-turn episode as one token sequence, so the loss trains exactly what the model was conditioned on.

Every turn's generation prompt is the episode's sequence so far: the first chat-templated prompt, then each
reply's sampled tokens, then the template's text for the next user message (the environment's observation or
the invalid-action feedback). The chat template is applied as text and only the new part is tokenized, so the
sampled tokens are never re-tokenized. A mask marks the model's own tokens: the loss covers only those.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


_OPENINGS_KEPT = 256  # tokenized first prompts kept for reuse (a step's groups; a cut long episode adds its own)


def _template_text(tokenizer: Any, messages: list[dict], generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(messages, add_generation_prompt=generation_prompt, tokenize=False)


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False)) if text else []


@dataclass
class TokenTranscript:
    """One episode's messages, its token sequence, and which tokens the model generated."""

    messages: list[dict]
    tokens: list[int]
    model_mask: list[float] = field(default_factory=list)
    prompt_length: int = 0

    @property
    def prompt(self) -> list[int]:
        """The first prompt's tokens (masked out)."""
        return self.tokens[:self.prompt_length]

    @property
    def completion(self) -> list[int]:
        """Everything after the first prompt: replies and the observations between them."""
        return self.tokens[self.prompt_length:]

    @property
    def completion_mask(self) -> list[float]:
        return self.model_mask[self.prompt_length:]


class ChatTokens:
    """Builds and extends :class:`TokenTranscript` objects with one tokenizer's chat template."""

    def __init__(self, tokenizer: Any):
        self.tokenizer = tokenizer
        self.templated = bool(getattr(tokenizer, "chat_template", None))
        self._first: dict[str, list[int]] = {}  # a group's episodes usually start from one observation

    def start(self, messages: list[dict]) -> TokenTranscript:
        key = repr(messages)
        if key not in self._first:
            if len(self._first) >= _OPENINGS_KEPT:
                self._first.clear()
            if self.templated:
                self._first[key] = _encode(self.tokenizer, _template_text(self.tokenizer, messages, True))
            else:
                self._first[key] = _encode(self.tokenizer, "\n".join(m["content"] for m in messages))
        tokens = list(self._first[key])
        return TokenTranscript(list(messages), tokens, [0.0] * len(tokens), len(tokens))

    def add_reply(self, transcript: TokenTranscript, tokens: list[int], text: str) -> None:
        """Append the model's sampled tokens (trained on) and its decoded reply (for the template)."""
        transcript.tokens += tokens
        transcript.model_mask += [1.0] * len(tokens)
        transcript.messages.append({"role": "assistant", "content": text})

    def add_user(self, transcript: TokenTranscript, text: str, stopped: bool) -> None:
        """Append the template's end of the last reply and a new user turn with its generation prompt.

        ``stopped``: the last reply ended on an end-of-turn token, which is then already in the sequence.
        """
        user = {"role": "user", "content": text}
        new = self._continuation(transcript, user, stopped)
        transcript.messages.append(user)
        transcript.tokens += new
        transcript.model_mask += [0.0] * len(new)

    def _continuation(self, transcript: TokenTranscript, user: dict, stopped: bool) -> list[int]:
        tok = self.tokenizer
        if not self.templated:
            return _encode(tok, "\n" + user["content"])
        *before, reply = transcript.messages
        opened = _template_text(tok, before, True)
        closed = _template_text(tok, transcript.messages, False)
        extended = _template_text(tok, transcript.messages + [user], True)
        if closed.startswith(opened + reply["content"]):
            closing = closed[len(opened) + len(reply["content"]):]
        else:  # a template that rewrites replies: close the turn with the end-of-turn token alone
            closing = tok.eos_token or ""
        if stopped:
            end = tok.decode([transcript.tokens[-1]]) if transcript.tokens else ""
            if end and closing.startswith(end):
                closing = closing[len(end):]
        if extended.startswith(closed):
            opening = extended[len(closed):]
        else:  # a template that rewrites earlier turns: the new turn on its own
            opening = _template_text(tok, [user], True)
        return _encode(tok, closing + opening)
