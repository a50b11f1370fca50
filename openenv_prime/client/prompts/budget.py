"""One character budget for the whole prompt, so a long episode's prompt does not grow without bound.

Each observation is kept within ``observation_budget``; the prompt as a whole (every message's text, the system
prompt included) within ``prompt_budget``. The rule, the same in every consumer (:func:`fit_prompt`):

- the system prompt and the first user message (the task) are always kept, and so is the newest turn;
- when the prompt would exceed the budget, the oldest turns (a reply and the message that answered it) are left out
  until the prompt fills at most half the budget, so the next cut comes only some turns later (each cut starts a
  new token sequence in the MLX trainer);
- the first user message then ends with a note saying how many were left out: ``[3 earlier turns left out]``;
- should the kept messages alone exceed the budget (a budget smaller than two observations), the newest reply, then
  the newest message, then the first message, then the system prompt keep their head and tail and say how much of
  the middle they left out. Nothing is cut silently.

:func:`fit_prompt` depends only on the messages it is given: applied to a prompt it fitted before with the new turns
appended (what verifiers' harness accumulates), it gives the prompt it gives on the whole conversation.
"""

from __future__ import annotations

import json
import re
from typing import Any

from openenv_prime.client.prompts.observations import cut_text

DEFAULT_PROMPT_BUDGET = 12_000
"""Characters per prompt: room for a system prompt, the task and the newest observation at their 4,000-character
observation budget, and a few turns of history."""

_NOTE = re.compile(r"\n\n\[(\d+) earlier turns? left out\]\Z")


def left_out_note(count: int) -> str:
    """The note after the first user message when ``count`` older turns were left out."""
    return f"[{count} earlier turn{'' if count == 1 else 's'} left out]"


def prompt_size(messages: list[dict[str, Any]]) -> int:
    """The prompt's size in characters: the text of every message (a non-text content counts as its JSON)."""
    return sum(_length(message.get("content")) for message in messages)


def fit_prompt(messages: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """``messages`` (system messages, the first user message, then replies and the messages answering them) within
    ``budget`` characters, by the rule of the module doc. The messages given are not changed."""
    start = next((i for i, message in enumerate(messages) if message.get("role") == "user"), None)
    if start is None:
        return _squeeze(list(messages), budget)
    head, first, rest = messages[:start], messages[start], messages[start + 1:]
    task, earlier = _without_note(first.get("content"))
    turns = [rest[i:i + 2] for i in range(0, len(rest), 2)]
    fixed = prompt_size(head) + _length(task)
    sizes = [prompt_size(turn) for turn in turns]

    def size(dropped: int, upto: int) -> int:
        count = earlier + dropped
        return fixed + (len(left_out_note(count)) + 2 if count else 0) + sum(sizes[dropped:upto])

    dropped = 0
    for upto in range(1, len(turns) + 1):  # the prompt as it was at each turn: a cut, once made, stays
        if size(dropped, upto) > budget:
            while dropped < upto - 1 and size(dropped, upto) > budget // 2:
                dropped += 1
    opening = {**first, "content": _with_note(task, earlier + dropped)}
    return _squeeze([*head, opening, *(m for turn in turns[dropped:] for m in turn)], budget, len(head))


def _with_note(task: Any, count: int) -> Any:
    if not count:
        return task
    note = f"\n\n{left_out_note(count)}"
    return task + note if isinstance(task, str) else [*task, {"type": "text", "text": note}]


def _without_note(content: Any) -> tuple[Any, int]:
    """The first user message's content without a note a previous fit added, and the count the note gave."""
    if isinstance(content, list) and content and isinstance(content[-1], dict):  # content parts: the note is the last
        found = _NOTE.fullmatch(str(content[-1].get("text", "")))
        return (content, 0) if found is None else (content[:-1], int(found.group(1)))
    if not isinstance(content, str):
        return content, 0
    found = _NOTE.search(content)
    return (content, 0) if found is None else (content[:found.start()], int(found.group(1)))


def _squeeze(messages: list[dict[str, Any]], budget: int, first: int = 0) -> list[dict[str, Any]]:
    """The last resort: the newest messages, then the first user message, then the system prompt cut to fit."""
    excess = prompt_size(messages) - budget
    if excess <= 0:
        return messages
    after = range(len(messages) - 1, first, -1)
    order = [*(i for i in after if messages[i].get("role") == "assistant"),
             *(i for i in after if messages[i].get("role") != "assistant"), *range(first, -1, -1)]
    squeezed = list(messages)
    for i in order:
        content = squeezed[i].get("content")
        if excess <= 0 or not isinstance(content, str) or not content:
            continue
        shorter = cut_text(content, max(len(content) - excess, 0), "this message")
        excess -= len(content) - len(shorter)
        squeezed[i] = {**squeezed[i], "content": shorter}
    return squeezed


def _length(content: Any) -> int:
    if content is None:
        return 0
    return len(content) if isinstance(content, str) else len(json.dumps(content))
