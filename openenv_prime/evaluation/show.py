"""`openenv-prime show RUN`: a few of an eval's episodes, readably: what the model was asked, what it replied, what
each step paid, and why the episode ended."""

from __future__ import annotations

import json
from typing import Any, Iterable

from rich.console import Group
from rich.markup import escape
from rich.panel import Panel
from rich.text import Text

ROLE_STYLES = {"system": "dim", "user": "cyan", "assistant": "green", "tool": "yellow"}


def choose(rows: list[dict[str, Any]], *, step: int | None = None, family: str | None = None, failed: bool = False,
           limit: int = 3) -> list[dict[str, Any]]:
    """The episodes to show: of ``step`` (default: an in-training file's last eval), of ``family`` only, only the
    unsolved ones when ``failed``, at most ``limit``; an episode logged twice for one step (a resumed run that
    evaluated it again) counts once, as last logged."""
    steps = [row["step"] for row in rows if row.get("step") is not None]
    if step is None and steps:
        step = max(steps)
    if step is not None:
        if step not in steps:
            raise ValueError(f"no episodes of step {step}; the file has steps {sorted(set(steps))}")
        rows = [row for row in rows if row.get("step") == step]
    latest = {(row.get("split"), row.get("index")): row for row in rows}
    rows = [row for row in rows if latest[row.get("split"), row.get("index")] is row]
    if family is not None:
        families = sorted({str(row.get("family")) for row in rows})
        if family not in families:
            raise ValueError(f"no episodes of family {family!r}; the families are {families}")
        rows = [row for row in rows if str(row.get("family")) == family]
    if failed:
        rows = [row for row in rows if not row.get("success")]
    return rows[:limit]


def episode_panel(row: dict[str, Any], max_chars: int = 800) -> Panel:
    """One episode: each message under its role (cut to ``max_chars``; 0 keeps all), then the step rewards, the
    reward, the stop reason, invalid actions and the environment's error."""
    parts: list[Any] = []
    for message in row.get("messages", []):
        role = message.get("role", "?")
        parts.append(Text(role, style=f"bold {ROLE_STYLES.get(role, '')}"))
        parts.append(Text(_cut(_said(message), max_chars)))
    if not row.get("messages"):
        parts.append(Text("(no messages recorded)", style="dim"))
    reward = row.get("reward")
    facts = [f"reward {'none' if reward is None else f'{reward:g}'} ({'solved' if row.get('success') else 'not solved'})",
             f"stop {row.get('stop')}", f"step rewards {_rewards(row.get('step_rewards', []))}",
             f"invalid actions {row.get('invalid_actions', 0)}"]
    if row.get("tokens") is not None:
        facts.append(f"tokens {row['tokens']}")
    parts.append(Text(" · ".join(facts), style="bold"))
    if row.get("error"):
        parts.append(Text(f"environment error: {row['error']}", style="red"))
    title = f"family {escape(str(row.get('family')))} · {escape(str(row.get('split')))}/{row.get('index')}"
    if str(row.get("key")) != f"{row.get('split')}/{row.get('index')}":
        title += f" · {escape(str(row.get('key')))}"
    if row.get("step") is not None:
        title = f"step {row['step']} · {title}"
    return Panel(Group(*parts), title=title, title_align="left", border_style="green" if row.get("success") else "red")


def _rewards(values: Iterable[float | None]) -> str:
    shown = ["none" if v is None else f"{v:g}" for v in values]
    return "[" + ", ".join(shown) + "]"


def _said(message: dict[str, Any]) -> str:
    """A message's text, and the tool calls it made (a tool-mode eval's replies are calls)."""
    text = message.get("content") or ""
    calls = [call.get("function", call) for call in message.get("tool_calls") or [] if isinstance(call, dict)]
    return "\n".join([text] * bool(text) + [json.dumps(call, ensure_ascii=False) for call in calls])


def _cut(text: str, max_chars: int) -> str:
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}… ({len(text) - max_chars} more characters; --max-chars 0 shows all)"
