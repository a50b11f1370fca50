"""What the tests of imported environments share: the question they ask, answered by an oracle that knows each
environment, and by a policy that knows none and follows only what its prompt says."""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from openenv_prime.testing.scripted_openai import last_user_text

QUESTION = re.compile(r"(\d+) ?\+ ?(\d+)\?")
_TAGS = re.compile(r"<(\w+)>(?:\.\.\.)?</\1>")  # a format the instructions show: "<answer>...</answer>"
_TOOL = re.compile(r"^- (\S+): .*\n  input schema: (\{.*\})$", re.MULTILINE)
ORACLE = {"vf_sums_env": ("completion", "answer"), "ors_sums_env": ("answer", None), "ors_quickstart_env": ("answer", None)}
"""What each environment takes, known to the oracle: its submit tool's argument, and the tag its reply goes in."""


def sum_in(text: str) -> str | None:
    """The sum the last "A + B?" (or "A+B?") in ``text`` asks for (what a model that can add would answer)."""
    found = QUESTION.findall(text)
    return str(int(found[-1][0]) + int(found[-1][1])) if found else None


def adder(argument: str, tag: str | None = None) -> Callable[[dict], str]:
    """A model that adds the question's numbers and calls the submit tool with the sum (inside ``<tag>`` tags)."""
    def reply(request: dict) -> str:
        answer = sum_in(last_user_text(request))
        return json.dumps({"tool": "submit", "arguments": {argument: f"<{tag}>{answer}</{tag}>" if tag else answer}})
    return reply


def oracle(name: str) -> Callable[[dict], str]:
    """The scripted oracle of the imported environment ``name``: it knows how that environment scores a reply."""
    return adder(*ORACLE[name])


def system_text(request: dict[str, Any]) -> str:
    return next((str(m["content"]) for m in request["messages"] if m["role"] == "system"), "")


def prompt_reader(request: dict) -> str:
    """A model that follows only what its prompt says: it adds the numbers of the question; writes the sum in the
    tags the system prompt shows, if any; and when the system prompt asks for a tool call, calls the listed tool
    with the sum as the argument its input schema requires (else its first text argument)."""
    system, user = system_text(request), last_user_text(request)
    answer = sum_in(user)
    tags = _TAGS.search(system)
    reply = f"<{tags.group(1)}>{answer}</{tags.group(1)}>" if tags else answer
    if "calling one tool per reply" not in system:
        return reply
    name, schema = _TOOL.search(user).groups()
    schema = json.loads(schema)
    texts = [field for field, spec in schema.get("properties", {}).items() if spec.get("type") == "string"]
    argument = next((field for field in schema.get("required", []) if field in texts), texts[0])
    return json.dumps({"tool": name, "arguments": {argument: reply}})


def request_text(request: dict) -> str:
    """Every message the model was sent in one request, as one text."""
    return "\n".join(str(message.get("content")) for message in request["messages"])
