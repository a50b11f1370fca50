"""The compatibility matrix: OpenEnv's own environments, served from a checkout, evaluated with `openenv-prime eval`.

Run it through `scripts/openenv-compat OPENENV_CHECKOUT` (which makes the server interpreter). For each
environment: write a task list, serve the environment class with the Task API added
(`openenv-prime serve MODULE:CLASS --tasks FILE --path CHECKOUT`, under --server-python), start a scripted
OpenAI-compatible "model" whose rule plays a legal move read from the text the model is shown, run
`openenv-prime eval` against both, and read its JSON report. Prints one table row per environment.
Nothing of OpenEnv's code is copied: the checkout is imported from where the user keeps it.
"""

from __future__ import annotations

import argparse
import ast
import json
import operator
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from tests.support.processes import free_port  # noqa: E402
from tests.support.scripted_openai import ScriptedOpenAIServer, last_user_text  # noqa: E402

Rule = Callable[[dict[str, Any]], str]


def user_texts(request: dict[str, Any]) -> list[str]:
    return [str(m.get("content")) for m in request.get("messages", []) if m.get("role") == "user"]


def field_value(text: str, name: str) -> Any:
    """The JSON value of a ``name: value`` line of the observation text (the default rendering)."""
    match = re.search(rf"^{re.escape(name)}: (.*)$", text, re.MULTILINE)
    if match is None:
        return None
    try:
        return json.loads(match.group(1))
    except ValueError:
        return match.group(1)


def last_observation(request: dict[str, Any], name: str) -> tuple[Any, str]:
    """The latest user text that shows ``name`` (feedback after a bad reply shows none) and its value."""
    for text in reversed(user_texts(request)):
        value = field_value(text, name)
        if value is not None:
            return value, text
    raise ValueError(f"no observation with {name!r} in {user_texts(request)[-1][:200]!r}")


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


# ---- the environments -----------------------------------------------------------------------------------
@dataclass
class Case:
    name: str
    env_class: str  # MODULE:CLASS inside the checkout
    tasks: list[dict[str, Any]]
    player: Rule
    max_steps: int
    per_family: int = 2
    family_field: str = "tier"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    classes: tuple[str, str] | None = None  # (action, observation) MODULE:CLASS when the class does not name them
    app: str = ""  # the environment's own FastAPI app (MODULE:ATTRIBUTE), served as is for the task-list path
    # False where the environment's own server starts one task from different states (chess picks the agent's
    # colour at random on every reset), which `openenv-prime eval`'s reset check rightly refuses
    reset_check: bool = True

    def __post_init__(self) -> None:
        self.app = self.app or self.env_class.split(":")[0].rsplit(".", 1)[0] + ".app:app"


def cases() -> list[Case]:
    mid_game = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"
    return [
        Case("echo_env", "envs.echo_env.server.echo_environment:EchoEnvironment",
             [{"split": "test", "id": f"echo-{i}", "tier": 0, "reset": {}} for i in range(2)],
             echo_player, max_steps=4),
        Case("grid_world_env", "envs.grid_world_env.server.grid_world_environment:GridWorldEnvironment",
             [{"split": "test", "id": f"grid-{i}", "tier": 0, "reset": {}} for i in range(2)],
             grid_world_player, max_steps=16),
        Case("connect4_env", "envs.connect4_env.server.connect4_environment:Connect4Environment",
             [{"split": "test", "id": f"connect4-{i}", "tier": 0, "reset": {}} for i in range(2)],
             connect4_player, max_steps=42,
             classes=("envs.connect4_env.models:Connect4Action", "envs.connect4_env.models:Connect4Observation")),
        Case("maze_env", "envs.maze_env.server.maze_env_environment:MazeEnvironment",
             [{"split": "test", "id": f"maze-{i}", "tier": 0, "reset": {}} for i in range(2)],
             maze_player, max_steps=200),
        Case("chess_env", "envs.chess_env.server.chess_environment:ChessEnvironment",
             [{"split": "test", "id": "start", "tier": 0, "reset": {}},
              {"split": "test", "id": "scholars-mate", "tier": 1, "reset": {"fen": mid_game}}],
             chess_player, max_steps=60, per_family=1,
             env_kwargs={"opponent": "random", "agent_color": "white"}, reset_check=False,
             classes=("envs.chess_env.models:ChessAction", "envs.chess_env.models:ChessObservation")),
        Case("reasoning_gym_env", "envs.reasoning_gym_env.server.reasoning_gym_environment:ReasoningGymEnvironment",
             [{"split": "test", "id": f"{name}-{i}", "dataset": name,
               "reset": {"dataset_name": name, "dataset_config": {}, "seed": i, "size": 1}}
              for name in ("basic_arithmetic", "leg_counting") for i in range(2)],
             reasoning_gym_player, max_steps=1, family_field="dataset"),
    ]


# ---- running one case -------------------------------------------------------------------------------------
@dataclass
class Row:
    name: str
    via: str
    episodes: int = 0
    completed: int = 0
    done: int = 0
    invalid: int = 0
    warnings: int = 0
    mean_reward: float = 0.0
    seconds: float = 0.0
    error: str = ""


VIA = {"taskapi": "Task API (serve --tasks)", "tasklist": "task list (eval --tasks)"}


def _serve(case: Case, via: str, checkout: Path, python: str, task_file: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """The Task API path serves the class through `openenv-prime serve MODULE:CLASS --tasks`; the task-list path
    serves the environment's own app, untouched, with uvicorn."""
    port = free_port()
    if via == "taskapi":
        command = [python, "-m", "openenv_prime", "serve", case.env_class, "--tasks", str(task_file), "--path",
                   str(checkout), "--port", str(port)]
        if case.env_kwargs:
            command += ["--env-kwargs", json.dumps(case.env_kwargs)]
        if case.classes:
            command += ["--action", case.classes[0], "--observation", case.classes[1]]
        env, cwd = dict(os.environ, PYTHONPATH=str(ROOT)), ROOT
    else:
        command = [python, "-m", "uvicorn", case.app, "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
        env, cwd = dict(os.environ, PYTHONPATH=str(checkout)), checkout
    process = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, cwd=cwd)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited: {log.read_text()[-1500:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.terminate()
    raise RuntimeError(f"the server did not answer /health within 180 s: {log.read_text()[-1500:]}")


def run_case(case: Case, via: str, checkout: Path, python: str, work: Path) -> Row:
    row = Row(case.name, VIA[via])
    started = time.perf_counter()
    task_file = work / f"{case.name}.jsonl"
    task_file.write_text("".join(json.dumps(task) + "\n" for task in case.tasks))
    try:
        process, url = _serve(case, via, checkout, python, task_file, work / f"{case.name}.{via}.server.log")
    except RuntimeError as error:
        row.error = str(error)
        return row
    try:
        with ScriptedOpenAIServer(case.player) as model_url:
            report_path = work / f"{case.name}.{via}.report.json"
            command = [sys.executable, "-m", "openenv_prime", "eval", "--base-url", url, "--model", "legal-moves",
                       "--model-base-url", model_url, "--per-family", str(case.per_family), "--max-steps",
                       str(case.max_steps), "--family-field", case.family_field, "--max-concurrency", "4",
                       "--timeout", "120", "--out", str(report_path)]
            if via == "tasklist":
                command += ["--tasks", str(task_file)] + ([] if case.reset_check else ["--no-reset-check"])
            done = subprocess.run(command, capture_output=True, text=True, timeout=1800, cwd=ROOT,
                                  env=dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="160"))
        if done.returncode != 0:
            row.error = (done.stderr or done.stdout)[-1500:]
            return row
        report = json.loads(report_path.read_text())
        results = report["results"]
        row.episodes = len(results)
        row.done = sum(bool(r["done"]) for r in results)
        row.completed = sum(bool(r["done"]) or r["steps"] >= case.max_steps for r in results)
        row.invalid = sum(r["invalid_actions"] for r in results)
        row.warnings = len(report.get("warnings") or [])
        row.mean_reward = sum(r["reward"] for r in results) / max(len(results), 1)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
        row.seconds = time.perf_counter() - started
    return row


def table(rows: list[Row]) -> Table:
    out = Table(title="OpenEnv environments through openenv-prime eval (legal-move scripted policy)")
    for column in ("environment", "tasks via", "episodes", "completed", "done by env", "invalid actions", "mean reward",
                   "warnings", "seconds"):
        out.add_column(column, justify="left" if column in ("environment", "tasks via") else "right")
    for r in rows:
        out.add_row(r.name, r.via if not r.error else "FAILED", str(r.episodes), str(r.completed), str(r.done),
                    str(r.invalid), f"{r.mean_reward:.3f}", str(r.warnings), f"{r.seconds:.1f}")
    return out


def markdown(rows: list[Row]) -> str:
    lines = ["| environment | tasks via | episodes | completed | done by env | invalid actions | mean reward | warnings | seconds |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [
        f"| {r.name} | {r.via if not r.error else 'FAILED'} | {r.episodes} | {r.completed} | {r.done} | {r.invalid} | "
        f"{r.mean_reward:.3f} | {r.warnings} | {r.seconds:.1f} |"
        for r in rows
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=Path, help="an OpenEnv checkout (the folder holding envs/)")
    parser.add_argument("--server-python", required=True, help="interpreter with openenv and the environments' dependencies")
    parser.add_argument("--only", nargs="+", default=None, help="only these environments (e.g. maze_env chess_env)")
    parser.add_argument("--work-dir", type=Path, default=None, help="keep task lists, server logs and reports here")
    parser.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    parser.add_argument("--via", nargs="+", choices=sorted(VIA), default=["taskapi", "tasklist"],
                        help="how tasks reach the eval: the Task API added by `openenv-prime serve MODULE:CLASS --tasks`, "
                             "and/or the environment's own server with a task list given to `openenv-prime eval --tasks` "
                             "(default: both)")
    args = parser.parse_args(argv)
    checkout = args.checkout.resolve()
    if not (checkout / "envs").is_dir():
        parser.error(f"{checkout} has no envs/ folder; pass the root of an OpenEnv checkout")
    chosen = [c for c in cases() if args.only is None or c.name in args.only]
    if not chosen:
        parser.error(f"--only {args.only} names none of {[c.name for c in cases()]}")
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="openenv-compat-"))
    work.mkdir(parents=True, exist_ok=True)
    console = Console(width=160)
    rows = []
    for case in chosen:
        for via in args.via:
            console.print(f"[bold]{case.name}[/bold] via {VIA[via]} ...")
            rows.append(run_case(case, via, checkout, args.server_python, work))
            if rows[-1].error:
                console.print(f"{case.name} failed: {rows[-1].error}", markup=False)
    console.print(table(rows))
    if args.markdown:
        print(markdown(rows))
    console.print(f"task lists, server logs and eval reports: {work}")
    bad = [f"{r.name} ({r.via})" for r in rows if r.error or r.invalid or r.completed != r.episodes or not r.episodes]
    if bad:
        console.print(f"[red]not fully compatible:[/red] {', '.join(bad)}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
