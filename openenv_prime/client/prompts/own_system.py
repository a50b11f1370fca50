"""The environment's own system prompt: what an environment states for the system role, found in its first observation.

An environment may bring its own instructions (a reply format such as ``<answer>...</answer>``). They are sent as the
system prompt in place of ours (:meth:`~openenv_prime.client.prompts.render.EpisodeProtocol.system_prompt` decides),
so they are taken out of the first user message and never shown twice. Where they are found, in the reset's
observation, its ``metadata`` and the frame's metadata (top-level fields only):

- a string field named in :data:`SYSTEM_FIELDS` (``system_prompt``, ``system_message``, ``system``, ``instructions``);
- the ``system`` messages of a chat-style message list: an ``openenv import``-ed verifiers environment sends its
  ``system_prompt`` as the first message of its ``prompt``.

Where the first observation states none, the split's ``/splits`` entry may declare one (a string under one of the same
names, :func:`declared`): it is the system text of the episodes reset with that split (and of every episode of a
server that resets by task spec, when all its splits that declare one declare the same).

Text blocks (ORS's ``[{"type": "text", "text": ...}]``, OpenAI's content parts) read as their text, here and in the
rendering (:func:`plain`).
"""

from __future__ import annotations

from typing import Any

from openenv_prime.client.prompts.hidden import normalized

SYSTEM_FIELDS = ("system_prompt", "system_message", "system", "instructions")
"""Observation fields that hold the environment's own instructions for the model (compared in normalized form)."""
_SYSTEM_KEYS = frozenset(normalized(name) for name in SYSTEM_FIELDS)


def text_blocks(value: Any) -> bool:
    """A non-empty list of text blocks ``{"type": "text", "text": ...}`` (ORS's ``TextBlock``, OpenAI's content parts)."""
    return isinstance(value, list) and bool(value) and all(
        isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str) for block in value
    )


def plain(value: Any) -> Any:
    """``value`` with text blocks as their text: a block list becomes one string, and so does a message's block-list
    ``content``; anything else is returned as it is."""
    if text_blocks(value):
        return "\n".join(block["text"] for block in value)
    if isinstance(value, list) and any(isinstance(item, dict) and text_blocks(item.get("content")) for item in value):
        return [{**item, "content": plain(item["content"])} if isinstance(item, dict) else item for item in value]
    return value


def take_system(observation: dict, metadata: dict) -> tuple[str | None, dict, dict]:
    """The environment's own system text (None when it states none) and ``observation`` and ``metadata`` without it.

    Texts found in several places are joined in order, each once; the inputs are not changed."""
    texts: list[str] = []
    observation = _without_system(observation, texts)
    if isinstance(observation.get("metadata"), dict):
        observation = {**observation, "metadata": _without_system(observation["metadata"], texts)}
    metadata = _without_system(metadata, texts)
    unique = list(dict.fromkeys(texts))
    return ("\n\n".join(unique) if unique else None), observation, metadata


def _without_system(fields: dict, texts: list[str]) -> dict:
    kept = {}
    for name, value in fields.items():
        value = plain(value)
        if normalized(name) in _SYSTEM_KEYS and isinstance(value, str):
            if value.strip():
                texts.append(value.strip())
            continue
        if _message_list(value):
            said = [m["content"].strip() for m in value if _role(m) == "system" and m["content"].strip()]
            if said:
                texts.extend(said)
                value = [m for m in value if _role(m) != "system"]
                if not value:
                    continue
        kept[name] = value
    return kept


def _message_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(item, dict) and isinstance(item.get("content"), str) for item in value
    )


def _role(message: dict) -> str:
    return str(message.get("role") or message.get("category") or "").casefold()


def declared(entries: list[dict[str, Any]]) -> dict[str, str]:
    """``{split: system text}`` for the ``/splits`` entries that declare one (under a name of :data:`SYSTEM_FIELDS`)."""
    found = {}
    for entry in entries:
        text = next((value for name, value in entry.items() if normalized(name) in _SYSTEM_KEYS
                     and isinstance(value, str) and value.strip()), None)
        if text is not None and isinstance(entry.get("name"), str):
            found[entry["name"]] = text.strip()
    return found


def for_split(declarations: dict[str, str], split: str | None) -> str | None:
    """The declared system text of an episode reset with ``split`` (None: reset by task spec, when every declaration
    agrees)."""
    if split is not None:
        return declarations.get(split)
    texts = set(declarations.values())
    return texts.pop() if len(texts) == 1 else None
