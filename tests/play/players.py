"""Scripted players for the grid world and the MCP environment: they read only the text the model is shown."""

from __future__ import annotations

import json
import re
from typing import Any

from openenv_prime.testing.scripted_openai import last_user_text

GOAL = re.compile(r"goal at \[(\d+), (\d+)\]")
POSITION = re.compile(r"^x: (\d+)\ny: (\d+)$", re.MULTILINE)
QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")
GOLD_QUESTION = re.compile(r"what is (\d+) plus (\d+)\?")
# the same move written the ways a model might: the reply must be matched case-insensitively, fenced or quoted
STYLES = (str, str.lower, lambda move: f"```\n{move}\n```", lambda move: f'"{move.title()}"')


def user_texts(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "user"]


def grid_move(first: str, last: str) -> str:
    """The move toward the goal named in the first message, from the position in the last one."""
    gx, gy = map(int, GOAL.search(first).groups())
    x, y = map(int, POSITION.findall(last)[-1])
    if x != gx:
        return "DOWN" if x < gx else "UP"
    return "RIGHT" if y < gy else "LEFT"


def grid_rule(blunder_first: bool = False):
    """Walks to the goal, writing each move in another style; `blunder_first` first answers "north"."""

    def rule(request: dict[str, Any]) -> str:
        users = user_texts(request)
        if blunder_first and len(users) == 1:
            return "north"
        moves = [t for t in users if POSITION.search(t)]
        move = grid_move(users[0], moves[-1])
        return STYLES[len(moves) % len(STYLES)](move)

    return rule


def mcp_rule(bad_arguments_first: bool = False, wrong_for: frozenset[str] = frozenset()):
    """Asks for the question, then submits the sum (off by one for questions in `wrong_for`, e.g. "2 + 3")."""

    def rule(request: dict[str, Any]) -> str:
        text = last_user_text(request)
        users = user_texts(request)
        if "Tools you can call" in text:
            return json.dumps({"tool": "get_question", "arguments": {}})
        asked = next((QUESTION.search(t) for t in reversed(users) if QUESTION.search(t)), None)
        if asked is None:
            return "I don't know"
        a, b = map(int, asked.groups())
        if bad_arguments_first and "not a valid action" not in text:
            return json.dumps({"tool": "submit_answer", "arguments": {"answer": "five"}})
        total = a + b + (1 if f"{a} + {b}" in wrong_for else 0)
        return "```json\n" + json.dumps({"tool_name": "submit_answer", "arguments": {"answer": total}}) + "\n```"

    return rule


def gold_rule(tools: bool):
    """Answers the gold server's question (tools: `check` first, then `submit`), reading only what it is shown."""

    def rule(request: dict[str, Any]) -> str:
        users = user_texts(request)
        asked = next(GOLD_QUESTION.search(t) for t in users if GOLD_QUESTION.search(t))
        reply = f"the sum is {int(asked.group(1)) + int(asked.group(2))}"
        if not tools:
            return reply
        tool = "submit" if "keep going" in users[-1] else "check"
        return json.dumps({"tool": tool, "arguments": {"completion": reply}})

    return rule


def prompt_texts(requests: list[dict[str, Any]]) -> list[str]:
    """Every message text the model received, system and user, every turn of every episode."""
    return [str(m.get("content")) for request in requests for m in request["messages"]]


# ---- the lookalike environments (tests/play/lookalike_envs.py): each reads only the prompt --------------------
def system_text(request: dict[str, Any]) -> str:
    return next((m["content"] for m in request["messages"] if m["role"] == "system"), "")


def fire_rule(request: dict[str, Any]) -> str:
    """Waters the first burning cell the grid lists, with the action word the system prompt states."""
    stated = re.search(r'"action" \(string, one of ((?:"\w+"(?:, )?)+) as the description says', system_text(request))
    assert stated is not None and '"water"' in stated.group(1), system_text(request)
    burning = re.search(r"^2 at \(row, column\): \((\d+), (\d+)\)", user_texts(request)[-1], re.MULTILINE)
    if burning is None:
        return "wait"  # a bare value fills the one required field
    row, column = map(int, burning.groups())
    return json.dumps({"action": "water", "x": column, "y": row})


def snake_rule(request: dict[str, Any]) -> str:
    """Replies with a name the description gives a value ("keep going"), never the number itself."""
    names = re.findall(r"^\s+\d+ = ([a-z ]+?)(?: \(|$)", system_text(request), re.MULTILINE)
    assert "keep going" in names, system_text(request)
    return "Keep going."


def catch_rule(request: dict[str, Any]) -> str:
    """Moves the paddle (bottom row of the grid template) under the ball (the other 1), among the legal actions."""
    text = user_texts(request)[-1]
    legal = json.loads(re.search(r"^Legal actions: (\[.*\])$", text, re.MULTILINE).group(1))
    rows = [line.split() for line in text.splitlines() if re.fullmatch(r"(\d )*\d", line)]
    ball = next(row.index("1") for row in rows[:-1] if "1" in row)
    paddle = rows[-1].index("1")
    move = 1 + (ball > paddle) - (ball < paddle)
    assert move in legal
    return str(move)


def guess_rule(request: dict[str, Any]) -> str:
    """Binary search on the game's answers ("Your guess of 10 is lower than the number.")."""
    low, high = 1, 20
    for text in user_texts(request):
        for guess, side in re.findall(r"Your guess of (\d+) is (lower|higher)", text):
            if side == "lower":
                low = max(low, int(guess) + 1)
            else:
                high = min(high, int(guess) - 1)
    return f"I guess [{(low + high) // 2}]"
