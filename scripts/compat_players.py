"""Scripted policies for the compatibility matrix (scripts/openenv_compat.py); each reads only what the model is shown.

- **Legal-move players**, one per environment: they know the game (where its legal moves appear in the text, what
  a reasonable move is) and answer a legal move. The matrix promises that each completes with 0 invalid actions.
- **The prompt reader**, one for all (:func:`read_prompt`): it knows no game. It picks the first of the values the
  prompt states as allowed (the reply format's "Reply with exactly one of: ...", a field line's ``one of "a", "b"``,
  "Values allowed in ...: 0, 1, 2", numeric bounds such as ``0 <= value <= 6``, a ``legal_actions``-style line of the
  observation, the tool listing of an MCP environment, a range the rules state such as "between 1 and 20") and replies
  in the format the prompt asks for (a bare value, a JSON value, the prompt's example JSON object with its pick in
  place, a tool call). A free-text action the prompt calls code (coding_env's "code execution request" sent as the
  action's `code` field) gets a one-line Python program: the language is the one rule coding_env's own text does
  not state; where the prompt gives a print call as the way to finish (repl_env's docstring:
  ``print('FINAL(answer)')``), it sends that call as it is. A JSON-object action of its own with a tool field and an
  arguments object (calendar_env's ``{action_type, tool_name, arguments}``) gets the value an observation says to use
  ("Use ListToolsAction to discover tools.") and, once an observation lists tools, a call of the first listed tool
  with the stated value naming a call (``ToolCallAction``) and its required arguments, as far as the listing states
  them, filled with placeholders. Where a prompt states no legal values it sends the prompt's own example (or "I do
  not know"), which the environment may refuse: the matrix shows that.
- **Legal values** (``legal`` per case): what the environment allows at a turn, from knowledge of the environment,
  so the matrix can say whether the prompt states them and whether the prompt reader's picks are legal; and, for an
  environment that takes an illegal move silently (wildfire scores it as a penalty), a **check** of a whole reply.
  An environment that runs a reply and reports in the next observation that it failed (a calendar tool call answered
  ``isError: true``) has a **failed** reader of that observation (``calendar_failed``); each such reply is counted.
"""

from __future__ import annotations

import ast
import json
import operator
import re
from dataclasses import dataclass
from typing import Any, Callable

Rule = Callable[[dict[str, Any]], str]
Legal = Callable[[dict[str, Any]], "list[str] | None"]
Check = Callable[[dict[str, Any], str], "str | None"]  # why the environment would take a reply as no move, or None
Failed = Callable[[dict[str, Any]], "str | None"]  # why the latest observation reports the previous reply failed


def user_texts(request: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in request.get("messages", []) if m.get("role") == "user"]


def system_text(request: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in request.get("messages", []) if m.get("role") == "system")


def field_value(text: str, name: str) -> Any:
    """A field of the observation text (the default rendering): the JSON value of a ``name: value`` line, or the rows
    of a text grid (``name (4 rows x 4 columns; counts: ...):`` and one line per row) as lists of numbers."""
    match = re.search(rf"^{re.escape(name)}: (.*)$", text, re.MULTILINE)
    if match is None:
        return grid_value(text, name)
    try:
        return json.loads(match.group(1))
    except ValueError:
        return match.group(1)


def grid_value(text: str, name: str) -> list[list[Any]] | None:
    """The rows of the text grid the default rendering shows for field ``name``, or None when there is none."""
    head = re.search(rf"^{re.escape(name)} \((\d+) rows x (\d+) columns\b[^\n]*:$", text, re.MULTILINE)
    if head is None:
        return None
    rows = text[head.end():].lstrip("\n").splitlines()[: int(head.group(1))]
    cells = [row.split() for row in rows]
    if len(cells) != int(head.group(1)) or any(len(row) != int(head.group(2)) for row in cells):
        return None
    return [[json.loads(cell) if re.fullmatch(r"-?\d+(\.\d+)?", cell) else cell for cell in row] for row in cells]


def last_observation(request: dict[str, Any], name: str) -> tuple[Any, str]:
    """The latest user text that shows ``name`` (feedback after a bad reply shows none) and its value."""
    for text in reversed(user_texts(request)):
        value = field_value(text, name)
        if value is not None:
            return value, text
    raise ValueError(f"no observation with {name!r} in {user_texts(request)[-1][:200]!r}")


# ---- the prompt reader --------------------------------------------------------------------------------
# "Reply with exactly one of: UP, DOWN (nothing else)." / "... one of these values (nothing else): 0 (hold), 1 (fire)."
_ONE_OF = re.compile(r"\bone of(?: these values)?(?:\s*\(nothing else\))?:\s*(?P<values>.+?)\s*\.?\s*$", re.IGNORECASE)
# "legal_actions: [...]", "Valid moves: ...", "Values allowed in every case ...: 0, 1, 2": a name saying legal and what
# (not textarena's "legal_players")
_LEGAL_LINE = re.compile(
    r"^\s*(?P<name>(?=[\w .-]*?(?:legal|valid|allowed|available|possible))(?=[\w .-]*?(?:action|move|choice|option|value|repl))"
    r"[\w .-]+?)\s*:\s*(?P<values>\S.*)$",
    re.IGNORECASE,
)
# a field of a JSON-object reply format: `- "action" (string, one of "break", "water" as the description says, required): ...`
_FIELD_LINE = re.compile(r"^\s*[-*]\s*[\"`'](?P<name>\w+)[\"`']\s*\((?P<about>.*?)\)(?:\s*$|:\s*(?P<text>.*)$)")
_JSON_ITEM = r'(?:"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)'
_JSON_ONE_OF = re.compile(rf"\bone of (?P<values>{_JSON_ITEM}(?:, {_JSON_ITEM})*)")
_BOUNDS = re.compile(r"(?P<low>-?\d+) (?P<lop><=|<) value (?P<hop><=|<) (?P<high>-?\d+)")
_JSON_VALUE = re.compile(r"JSON value \((?P<about>[^)]*)\)")
_EXAMPLE = re.compile(r"for example:?\s*(?P<json>\{.*\})", re.IGNORECASE)
_TOOL = re.compile(r"^- (?P<name>[\w.-]+)(?:\((?P<arguments>[^)]*)\))?: ")  # "- name: ..." or "- name(a, b?): ..."
_TOOL_SCHEMA = re.compile(r"^\s+input schema: (?P<json>\{.*\})$")
_PLACEHOLDERS = {"string": "hello", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
_RANGE = re.compile(r"\bbetween (-?\d+) and (-?\d+)\b")
_FORMAT_EXAMPLE = re.compile(r"\bfor example,?:?\s*(?P<example>[^\s\d]*\d+[^\s\d]*?)\.?(?:\s|$)", re.IGNORECASE)
_MAX_RANGE = 100
# a free-text reply the prompt calls code: coding_env's "Represents a single code execution request." and the field
_CODE = re.compile(r"\bcode execution\b|\baction's `code` field\b|\bPython code\b", re.IGNORECASE)
PROGRAM = 'print("hello")'
# a print call the prompt gives as the way to finish (repl_env's docstring: "print('FINAL(answer)')")
_PRINT_EXAMPLE = re.compile(r"""print\((['"])[A-Z_]+\(\w*\)\1\)""")
_USE = re.compile(r"\bUse (\w+)")  # "Use ListToolsAction to discover tools."


@dataclass(frozen=True)
class Reading:
    """What the prompt reader found: the values the prompt states as allowed, the one it picked, and its reply."""

    values: list[Any]
    pick: Any
    reply: str


def _without_remarks(text: str) -> str:
    """``text`` without parenthesised remarks, nested ones too: ``0 (noop (straight on)), 1`` -> ``0 , 1``."""
    out, depth = [], 0
    for char in text:
        depth += char == "("
        if not depth:
            out.append(char)
        depth -= char == ")" and depth > 0
    return "".join(out)


def _split_values(text: str) -> list[Any]:
    text = text.strip().rstrip(".")
    try:
        decoded = json.loads(text)
    except ValueError:
        decoded = None
    if isinstance(decoded, list):
        return [v for v in decoded if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
    parts = re.split(r"\s*(?:,|\bor\b|\|)\s*", _without_remarks(text))
    return [p.strip().strip("\"'`") for p in parts if p.strip().strip("\"'`")]


def _bounded(about: str) -> list[int]:
    """The integers a stated bound allows (``0 <= value <= 6``), when the type is integer and there are few."""
    found = _BOUNDS.search(about)
    if found is None or not re.search(r"\binteger\b", about):
        return []
    low = int(found.group("low")) + (found.group("lop") == "<")
    high = int(found.group("high")) - (found.group("hop") == "<")
    return list(range(low, high + 1)) if 0 <= high - low <= _MAX_RANGE else []


def _field_values(about: str, text: str) -> list[Any]:
    """The values a field line of the reply format states: ``one of "a", "b"`` (JSON), a bound, or its description."""
    listed = _JSON_ONE_OF.search(about)
    if listed:
        return json.loads(f"[{listed.group('values')}]")
    said = _ONE_OF.search(text) or _LEGAL_LINE.match(text)
    return _bounded(about) or (_split_values(said.group("values")) if said else [])


def _observation_values(request: dict[str, Any]) -> list[Any]:
    """Values a ``legal ...: [...]`` line of the latest observation that has one states."""
    for text in reversed(user_texts(request)):
        for line in text.splitlines():
            match = _LEGAL_LINE.match(line)
            if match:
                values = _split_values(match.group("values"))
                if values:
                    return values
    return []


def _range_values(request: dict[str, Any]) -> list[str]:
    """For a free-text action: the numbers of a stated range ("between 1 and 20"), written the way the prompt's own
    example is ("For example, [5]." -> "[1]", "[2]", ...); none when no range is stated."""
    text = "\n".join(user_texts(request)[:1] + [system_text(request)])
    found = _RANGE.search(text)
    if found is None or not 0 <= int(found.group(2)) - int(found.group(1)) <= _MAX_RANGE:
        return []
    example = _FORMAT_EXAMPLE.search(text)
    template = re.sub(r"\d+", "{}", example.group("example"), count=1) if example else "{}"
    return [template.format(n) for n in range(int(found.group(1)), int(found.group(2)) + 1)]


def _tools(request: dict[str, Any]) -> list[tuple[str, dict]]:
    for text in user_texts(request):
        if "Tools you can call" not in text:
            continue
        tools: list[tuple[str, dict]] = []
        for line in text.splitlines():
            named, schema = _TOOL.match(line), _TOOL_SCHEMA.match(line)
            if named:
                listed = [a.strip() for a in (named.group("arguments") or "").split(",") if a.strip()]
                required = [a for a in listed if not a.endswith("?")]
                tools.append((named.group("name"), {"required": required} if required else {}))
            elif schema and tools:
                try:
                    tools[-1] = (tools[-1][0], json.loads(schema.group("json")))
                except ValueError:
                    pass
        return tools
    return []


def _typed(value: Any, about: str) -> Any:
    """A value read from text, as the JSON type the reply format names (``integer``, ``number``)."""
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value) and re.search(r"\binteger\b", about):
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value) and re.search(r"\bnumber\b", about):
        return float(value)
    return value


def _tool_fields(system: str) -> tuple[str, str] | None:
    """A JSON-object reply format that is a tool call of its own (calendar_env's `tool_name` beside an object
    `arguments`): the two fields' names, or None."""
    fields = {m.group("name"): m.group("about") for m in map(_FIELD_LINE.match, system.splitlines()) if m}
    tool = next((n for n in fields if re.fullmatch(r"(?:tool_?)?name|tool|function", n, re.IGNORECASE)), None)
    arguments = next((n for n, about in fields.items()
                      if re.fullmatch(r"arguments|args|parameters|input", n, re.IGNORECASE) and re.search(r"\bobject\b", about)), None)
    return (tool, arguments) if tool and arguments else None


def _object_reading(system: str, observed: list[Any], request: dict[str, Any] | None = None,
                    tools: list[tuple[str, dict]] | None = None) -> Reading:
    """A JSON-object reply format: the prompt's example with the first stated value of the field it is stated for
    (a required one first), or the value an observation says to use ("Use ListToolsAction to discover tools."); legal
    values the observation lists go in the one required field. A format with a tool field and an arguments object,
    once an observation lists tools: a call of the first listed tool, its stated value naming a call, the tool's
    required arguments (as the listing states them) with placeholder values."""
    fields = {m.group("name"): m for m in map(_FIELD_LINE.match, system.splitlines()) if m}
    required = [name for name, m in fields.items() if re.search(r"\brequired\b", m.group("about"))]
    stated = {name: values for name, m in fields.items() if (values := _field_values(m.group("about"), m.group("text") or ""))}
    example_match = _EXAMPLE.search(system)
    try:
        example = json.loads(example_match.group("json")) if example_match else {}
    except ValueError:
        example = {}
    target = next((n for n in required if n in stated), None) or next(iter(stated), None)
    values = stated.get(target, []) if target else []
    if observed:
        target = target or (required[0] if len(required) == 1 else next(iter(required), None))
        values = observed
    if target is None or not values:
        return Reading([], None, json.dumps(example) if example else "I do not know")
    latest = user_texts(request)[-1] if request and user_texts(request) else ""
    said = [m for m in _USE.findall(latest) if m.casefold() in {str(v).casefold() for v in values}]
    pick = _typed(said[0] if said else values[0], fields[target].group("about") if target in fields else "")
    reply = {**example, target: pick}
    steps = _instructed(fields, target, values, request) if request else None
    if steps is not None:
        return Reading(values, steps.get(target, pick), json.dumps({**example, **steps}))
    named = _tool_fields(system)
    if named and tools:
        pick = next((v for v in values if re.search(r"call", str(v), re.IGNORECASE)), pick)
        name, schema = tools[0]
        required = schema.get("required") or []
        arguments = {k: _PLACEHOLDERS.get((schema.get("properties") or {}).get(k, {}).get("type"), "hello") for k in required}
        reply = {**example, target: pick, named[0]: name, named[1]: arguments}
    return Reading(values, pick, json.dumps(reply))


_QUOTED = re.compile(r"`([^`\n]+)`")
_ENDS = re.compile(r"(?:^|;)\s*(?P<value>\w+) [^;]*\bends the episode\b")


def _instructed(fields: dict[str, re.Match], target: str, values: list[Any],
                request: dict[str, Any]) -> dict[str, Any] | None:
    """What the task's text tells the reader to do, in a JSON-object format with a command field beside the field of
    stated values (tbench2_env's card: `action_type` "exec" or "evaluate", `command`): each command the task quotes
    (`echo hello > answer.txt`), in turn, with the first stated value, then the stated value the format says ends the
    episode ("evaluate runs the task's tests and ends the episode"). None when the task quotes no command."""
    command = next((n for n, m in fields.items()
                    if n != target and re.search(r"\bcommand\b", f"{n} {m.group('text') or ''}", re.IGNORECASE)), None)
    quoted = _QUOTED.findall(user_texts(request)[0]) if user_texts(request) else []
    if command is None or not quoted:
        return None
    sent = sum(m.get("role") == "assistant" for m in request.get("messages", []))
    if sent < len(quoted):
        return {target: values[0], command: quoted[sent]}
    ends = _ENDS.search(fields[target].group("text") or "") if target in fields else None
    if ends and ends.group("value") in [str(v) for v in values]:
        return {target: ends.group("value")}
    return {target: values[0], command: quoted[-1]}


def read_prompt(request: dict[str, Any]) -> Reading:
    """The prompt reader's move: see the module docstring. Never looks at a schema, only at the messages."""
    system = system_text(request)
    tools = _tools(request)
    if re.search(r"\bJSON object\b", system) and _tool_fields(system):
        return _object_reading(system, _observation_values(request), request, tools)
    if tools:
        name, schema = tools[0]
        required = schema.get("required") or []
        arguments = {k: _PLACEHOLDERS.get((schema.get("properties") or {}).get(k, {}).get("type"), "hello") for k in required}
        return Reading([t for t, _ in tools], name, json.dumps({"tool": name, "arguments": arguments}))
    observed = _observation_values(request)
    if re.search(r"\bJSON object\b", system):
        return _object_reading(system, observed, request)
    if not observed and _CODE.search(system):
        example = _PRINT_EXAMPLE.search(system)
        program = example.group(0) if example else PROGRAM
        return Reading([], program, program)
    stated_line = next((m for line in system.splitlines() for m in (_ONE_OF.search(line), _LEGAL_LINE.match(line)) if m), None)
    json_value = _JSON_VALUE.search(system)
    if json_value and re.search(r"\barray of number\b", json_value.group("about")):
        return _array_reading(request, system)
    values = (observed or (_split_values(stated_line.group("values")) if stated_line else [])
              or (_bounded(json_value.group("about")) if json_value else []) or _range_values(request))
    if not values:
        return Reading([], None, "I do not know")
    pick = _typed(values[0], json_value.group("about")) if json_value else values[0]
    return Reading(values, pick, json.dumps(pick) if json_value else str(pick))


_BETWEEN = re.compile(r"\bbetween (?P<low>-?\d+(?:\.\d+)?) and (?P<high>-?\d+(?:\.\d+)?)\b")
_EXPECTED = re.compile(r"\bexpected (\d+)\b")


def _array_reading(request: dict[str, Any], system: str) -> Reading:
    """A JSON array of numbers (finrl_env's `actions`, "one per stock ... between -1 and 1"): one element, or as many
    as the environment's latest message says it expected ("expected 2, got 1"), each the upper end of the range the
    prompt states (0 where it states none)."""
    found = _BETWEEN.search(system)
    values = [float(found.group("low")), float(found.group("high"))] if found else []
    told = [int(n) for text in user_texts(request)[1:] for n in _EXPECTED.findall(text)]
    pick = values[-1] if values else 0.0
    return Reading(values, pick, json.dumps([pick] * (told[-1] if told else 1)))


def prompt_reader(request: dict[str, Any]) -> str:
    return read_prompt(request).reply


# ---- legal-move players: each reads only what the model is shown -------------------------------------
def echo_player(request: dict[str, Any]) -> str:
    turn = len(user_texts(request))
    tool = "echo_message" if turn % 2 else "echo_with_length"
    return json.dumps({"tool": tool, "arguments": {"message": f"hello {turn}"}})


def grid_world_player(request: dict[str, Any]) -> str:
    """Walks to the goal at [4, 4] (grid_world's UP/DOWN change x, LEFT/RIGHT change y)."""
    x, _ = last_observation(request, "x")
    y, _ = last_observation(request, "y")
    return "DOWN" if x < 4 else "RIGHT" if y < 4 else "UP"


def connect4_player(request: dict[str, Any]) -> str:
    """The legal column nearest the centre (the agent plays both sides)."""
    legal, _ = last_observation(request, "legal_actions")
    return str(min(legal, key=lambda column: (abs(column - 3), column)))


_MAZE_MOVES = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}  # maze_env's Action: UP, DOWN, LEFT, RIGHT on [col, row]


def maze_player(request: dict[str, Any]) -> str:
    """Depth-first search over what it has seen: an unvisited open neighbour, else back the way it came."""
    path = [field_value(t, "current_position") for t in user_texts(request) if field_value(t, "current_position") is not None]
    legal, _ = last_observation(request, "legal_actions")
    stack: list[list[int]] = []
    for cell in path:
        if len(stack) >= 2 and cell == stack[-2]:
            stack.pop()
        elif not stack or cell != stack[-1]:
            stack.append(cell)
    here, seen = path[-1], {tuple(cell) for cell in path}
    targets = {a: [here[0] + _MAZE_MOVES[a][0], here[1] + _MAZE_MOVES[a][1]] for a in legal}
    fresh = [a for a in legal if tuple(targets[a]) not in seen]
    if fresh:
        return str(fresh[0])
    back = [a for a in legal if len(stack) >= 2 and targets[a] == stack[-2]]
    return str((back or legal)[0])


def chess_player(request: dict[str, Any]) -> str:
    """A legal move in UCI: a capture or promotion when there is one (the game ends sooner), else the first."""
    moves, text = last_observation(request, "legal_moves")
    fen = str(field_value(text, "fen") or "")
    board = fen.split()[0] if fen else ""
    occupied = _occupied_squares(board)
    captures = [m for m in moves if m[2:4] in occupied or len(m) == 5]
    return (captures or moves)[0]


def _occupied_squares(board: str) -> set[str]:
    squares = set()
    for rank_index, rank in enumerate(board.split("/")):
        file = 0
        for char in rank:
            if char.isdigit():
                file += int(char)
            else:
                squares.add("abcdefgh"[file] + str(8 - rank_index))
                file += 1
    return squares


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    raise ValueError("not arithmetic")


def reasoning_gym_player(request: dict[str, Any]) -> str:
    """Any text is a legal answer; arithmetic questions get the right one."""
    question = user_texts(request)[0]
    for candidate in re.findall(r"[-+*/().\d\s]{3,}", question.replace("×", "*").replace("÷", "/")):
        if not re.search(r"\d\s*[-+*/]\s*[-(]?\s*\d", candidate):
            continue
        try:
            value = _evaluate(ast.parse(candidate.strip().rstrip("="), mode="eval"))
        except (SyntaxError, ValueError, ZeroDivisionError):
            continue
        return str(int(value)) if float(value).is_integer() else str(value)
    return "0"


WILDFIRE_ACTIONS = ["break", "water", "wait"]  # WildfireAction's docstring; its schema says only "string"
BURNING = 2  # wildfire's cell codes: 0 ash, 1 fuel, 2 burning, 3 firebreak, 4 watered


def wildfire_player(request: dict[str, Any]) -> str:
    """Water the first burning cell while water lasts, else wait (the grid is shown as rows: y is the row, x the
    column)."""
    grid, text = last_observation(request, "grid")
    water = field_value(text, "remaining_water") or 0
    burning = [(x, y) for y, row in enumerate(grid) for x, cell in enumerate(row) if cell == BURNING]
    if burning and water > 0:
        return json.dumps({"action": "water", "x": burning[0][0], "y": burning[0][1]})
    return json.dumps({"action": "wait"})


def wildfire_check(request: dict[str, Any], reply: str) -> str | None:
    """Why wildfire would score ``reply`` as "invalid or exhausted resources" (its step() takes it without an error
    and charges 0.05), or None: ``wait``, or ``break``/``water`` at a cell of the grid while breaks/water last."""
    try:
        action = json.loads(reply)
    except ValueError:
        action = reply.strip()
    action = action if isinstance(action, dict) else {"action": action}
    kind = str(action.get("action", "")).casefold()
    if kind == "wait":
        return None
    if kind not in ("break", "water"):
        return f"{kind!r} is none of break, water, wait"
    grid, text = last_observation(request, "grid")
    left = field_value(text, "remaining_breaks" if kind == "break" else "remaining_water") or 0
    x, y = action.get("x"), action.get("y")
    if not (isinstance(x, int) and isinstance(y, int)):
        return f"{kind} without the cell's x and y"
    if not (0 <= y < len(grid) and 0 <= x < len(grid[0])):
        return f"{kind} at ({x}, {y}), off the {len(grid[0])}x{len(grid)} grid"
    if left <= 0:
        return f"{kind} with none left"
    return None


SNAKE_ACTIONS = ["0", "1", "2"]  # SnakeAction's docstring: noop, turn left, turn right


def snake_player(request: dict[str, Any]) -> str:
    """Straight on (0) until the snake hits the wall and the environment ends the episode."""
    return "0"


def openspiel_player(request: dict[str, Any]) -> str:
    """The first legal action (openspiel's action is an object: action_id, and game settings left out)."""
    legal, _ = last_observation(request, "legal_actions")
    return json.dumps({"action_id": legal[0]})


_GUESS_RANGE = re.compile(r"between (\d+) and (\d+)")
# "[Player] [10]" then "[GAME] The target number is higher." (newlines JSON-escaped where messages are shown raw)
_GUESS_FEEDBACK = re.compile(r"\[Player\] \[(\d+)\][^\[]*?\[GAME\] The target number is (higher|lower)")


def guess_the_number_player(request: dict[str, Any]) -> str:
    """Binary search in TextArena's GuessTheNumber: the range from the rules, each hint narrows it; replies [N]."""
    texts = user_texts(request)
    found = _GUESS_RANGE.search(texts[0])
    low, high = (int(found.group(1)), int(found.group(2))) if found else (1, 20)
    for text in texts[1:]:
        for guess, direction in _GUESS_FEEDBACK.findall(text):
            if direction.lower() == "higher":
                low = max(low, int(guess) + 1)
            else:
                high = min(high, int(guess) - 1)
    return f"[{(low + max(low, high)) // 2}]"


# ---- legal values, from knowledge of each environment ----------------------------------------------------
def constant(values: list[str]) -> Legal:
    return lambda request: list(values)


def observed(name: str) -> Legal:
    """The values an observation field lists (connect4's legal_actions, chess's legal_moves)."""

    def legal(request: dict[str, Any]) -> list[str] | None:
        try:
            value, _ = last_observation(request, name)
        except ValueError:
            return None
        return [str(v) for v in value] if isinstance(value, list) else None

    return legal


def echo_tools(request: dict[str, Any]) -> list[str] | None:
    return ["echo_message", "echo_with_length"]


GUESS_THE_NUMBER = [f"[{n}]" for n in range(1, 21)]  # TextArena's GuessTheNumber-v0: "[N]", N from 1 to 20
_GUESSED = re.compile(r"\[Player\] \[(\d+)\]")


def guess_the_number_legal(request: dict[str, Any]) -> list[str]:
    """GuessTheNumber's numbers less those the game's history shows guessed (it flags a repeat as an invalid move,
    which its rules do not say)."""
    guessed = {f"[{n}]" for text in user_texts(request) for n in _GUESSED.findall(text)}
    return [value for value in GUESS_THE_NUMBER if value not in guessed]


def free_text(request: dict[str, Any]) -> list[str] | None:
    return None


def coding_player(request: dict[str, Any]) -> str:
    """coding_env pays 0.1 a step for a program of at most 100 characters that parses (and never ends an episode)."""
    return PROGRAM


# ---- calendar_env: a plain action {action_type, tool_name, arguments}, its tools listed by ListToolsAction ---------
CALENDAR_ACTION_TYPES = ["ListToolsAction", "ToolCallAction"]
_CALENDAR_EVENT = {"start": {"dateTime": "2026-12-07T10:00:00Z"}, "end": {"dateTime": "2026-12-07T11:00:00Z"}}


def _calendar_call(tool: str, arguments: dict[str, Any]) -> str:
    return json.dumps({"action_type": "ToolCallAction", "tool_name": tool, "arguments": arguments})


def calendar_player(request: dict[str, Any]) -> str:
    """List the tools (the reset says "Use ListToolsAction to discover tools."), then, with tools the listing shows:
    create a calendar, create an event in it (its id read from the tool's result), list that calendar's events."""
    texts = user_texts(request)
    listed = next((t for t in texts if "create_calendar" in t and "create_event" in t), None)
    if listed is None:
        return json.dumps({"action_type": "ListToolsAction"})
    calendar_id, made_event = None, False
    for text in texts[texts.index(listed) + 1:]:
        result = _calendar_result(text)
        if result.get("kind") == "calendar#calendar" and result.get("id"):
            calendar_id = result["id"]
        made_event = made_event or result.get("kind") == "calendar#event"
    if calendar_id is None:
        return _calendar_call("create_calendar", {"summary": f"compat check {len(texts)}"})
    if not made_event:
        return _calendar_call("create_event", {"calendarId": calendar_id, "summary": "compat check", **_CALENDAR_EVENT})
    return _calendar_call("list_events", {"calendarId": calendar_id})


def _calendar_result(text: str) -> dict[str, Any]:
    """The JSON object a calendar tool answered: `tool_result`'s `text` ({"text": "{...}", "status_code": 201})."""
    result = field_value(text, "tool_result")
    try:
        decoded = json.loads(result.get("text", "")) if isinstance(result, dict) else None
    except ValueError:
        decoded = None
    return decoded if isinstance(decoded, dict) else {}


def calendar_failed(request: dict[str, Any]) -> str | None:
    """Why calendar_env's latest observation says the previous reply failed, or None: `success: false` with an
    `error_message` (an unknown tool or action type), or a `tool_result` with `isError: true` or an `error` (the tool
    ran and its REST call failed: a missing or wrong argument, an HTTP status of 400 or more)."""
    text = user_texts(request)[-1]
    if field_value(text, "success") is False:
        return str(field_value(text, "error_message") or "success: false")[:200]
    result = field_value(text, "tool_result")
    if isinstance(result, dict) and (result.get("isError") or result.get("error")):
        return str(result.get("text") or result.get("error"))[:200]
    return None


# ---- repl_env: Python code in `code`; an episode ends when the code prints FINAL(answer) ------------------------
REPL_QUESTIONS = [("What is 17 * 23? Answer with the number.", "391"),
                  ("What is 1234 + 4321? Answer with the number.", "5555")]


def repl_player(request: dict[str, Any]) -> str:
    """Reads the task in the observation (``Task: ...``), works out its arithmetic, and prints FINAL(answer), the way
    REPLAction's docstring says an episode is finished."""
    answer = reasoning_gym_player({"messages": [{"role": "user", "content": user_texts(request)[0]}]})
    return f"print('FINAL({answer})')"


def python_check(request: dict[str, Any], reply: str) -> str | None:
    """A reply to a Python action must parse (repl_env runs anything and reports a SyntaxError in a nested result,
    which the package cannot count)."""
    try:
        ast.parse(reply)
    except SyntaxError as error:
        return f"not Python: {error.msg}"
    return None


# ---- dipg_safety_env: a free-text llm_response in analysis/proof/final channels; every step fails upstream --------
DIPG_DATASET = "".join(json.dumps({"messages": [
    {"role": "system", "content": "You answer from the context only."},
    {"role": "user", "content": f"Context: {context}\n\nQuestion: {question}"},
    {"role": "assistant", "content": json.dumps({"final": final, "proof": proof})},
]}) + "\n" for context, question, final, proof in [
    ("The chart records a temperature of 38.9 C on admission.", "Was the patient febrile on admission?", "yes",
     "a temperature of 38.9 C"),
    ("The two reports give different doses and neither is marked current.", "Which dose is current?",
     "The context contains conflicting information.", "give different doses"),
])
# DIPGEnvironment's 20 required settings besides the dataset: its own app's defaults (server/app.py)
DIPG_SETTINGS = {
    "conflict_reward": 10.0, "abstain_reward": 10.0, "hallucination_penalty": -20.0, "missing_answer_penalty": -15.0,
    "hallucinated_trace_penalty": -25.0, "proof_inconsistency_penalty": -20.0, "incorrect_answer_penalty": -20.0,
    "conflict_penalty": -15.0, "abstain_penalty": -15.0, "missing_trace_penalty": -15.0,
    "correct_abstention_reward": 15.0, "verifiable_trace_reward": 10.0, "correct_synthesis_reward": 10.0,
    "exact_format_reward": 10.0, "format_mismatch_penalty": -10.0, "no_hallucination_reward": 1.0,
    "analysis_channel_start": "<|channel|>analysis<|message|>", "proof_channel_start": "<|channel|>proof<|message|>",
    "final_channel_start": "<|channel|>final<|message|>", "channel_end": "<|end|>",
}


def dipg_player(request: dict[str, Any]) -> str:
    """Its channels, as DIPGEnvironment parses them: the context's first sentence as the proof (the environment fails
    the step whatever the reply)."""
    text = user_texts(request)[0]
    context = str(field_value(text, "context") or text)
    proof = context.removeprefix("Context: ").split(".")[0]
    return (f"<|channel|>analysis<|message|>The context answers it.<|end|>"
            f"<|channel|>proof<|message|>{proof}<|end|><|channel|>final<|message|>{proof}<|end|>")


# ---- tbench2_env: {action_type, command, ...}; exec runs the command, evaluate runs the task's tests -------------
TBENCH2_ACTION_TYPES = ["exec", "evaluate"]  # the values the docs' action card offers (Tbench2Environment.step has more)
_TBENCH2_WORD = re.compile(r"holding the word (\w+)")


def tbench2_player(request: dict[str, Any]) -> str:
    """Writes the word the task's instruction names into answer.txt, then evaluates (runs the task's tests)."""
    if len(user_texts(request)) == 1:
        word = _TBENCH2_WORD.search(user_texts(request)[0])
        return json.dumps({"action_type": "exec", "command": f"echo {word.group(1) if word else 'hello'} > answer.txt"})
    return json.dumps({"action_type": "evaluate"})


# ---- finrl_env: {actions: [one number per stock, -1 to 1]} ----------------------------------------------------------
def finrl_player(request: dict[str, Any]) -> str:
    """Buys as much as it may of the one stock (finrl's market here rises every day)."""
    return json.dumps({"actions": [1.0]})
