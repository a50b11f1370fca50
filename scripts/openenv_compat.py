"""The compatibility matrix: OpenEnv's own environments, served from a checkout, evaluated by openenv-prime's eval.

Run it through `scripts/openenv-compat OPENENV_CHECKOUT`. For each environment: write a task list, serve it both
ways this package offers (the class with the Task API added, `openenv-prime serve MODULE:CLASS --tasks FILE`, and the
environment's own app under uvicorn with the task list given to the eval), each from a virtualenv that holds what
that environment needs (made on first use: `.venv-compat` for the six original environments, `.venv-compat-NAME`
for the others), started and stopped by `openenv_prime.envs.launch`. Then run `openenv_prime.evaluation.run_eval`
(what `openenv-prime eval` runs) twice, with two scripted policies that read only the messages the model is shown
(scripts/compat_players.py): the environment's legal-move player, and the prompt reader, which knows no game and
picks among the values the prompt states. Prints one table row per environment and way of serving, with the
episodes the environment failed (stop "error") counted apart. An environment that fails on its own (`Case.env_fails`:
dipg_safety_env) is expected to: its row passes when the eval reports each episode as errored and returns a result.
With `--train-steps N`, the MLX trainer also trains a tiny random-weight model N steps on each served environment.
An environment whose constructor takes Python objects (finrl_env) is served through `serve MODULE:FUNCTION` with a
function of scripts/compat_factories.py; one that needs a flag the docs give a new user (tbench2_env's action card)
gets it in the eval and the train (`Case.action_card`).
Nothing of OpenEnv's code is copied: the checkout is imported from where the user keeps it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(Path(__file__).resolve().parent)]

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import compat_players as players  # noqa: E402
from openenv_prime.client.engine.episode_rules import DEFAULT_RULES  # noqa: E402
from openenv_prime.client.tasks.resetcheck import ResetIgnoredError  # noqa: E402
from openenv_prime.client.wire.errors import OpenEnvError  # noqa: E402
from openenv_prime.envs.launch import ServerStartError, local_app, local_server  # noqa: E402
from openenv_prime.evaluation import EvalConfig, run_eval  # noqa: E402
from openenv_prime.evaluation.report import report_dict, write_json  # noqa: E402

# What every server interpreter needs: openenv with the Task API, and openenv-prime's server side (imported from
# this tree through PYTHONPATH). The environments' own pyprojects pin openenv-core, which has no Task API routes.
SERVER_REQUIREMENTS = ("openenv==0.10.0", "uvicorn>=0.30", "fastapi>=0.110", "httpx>=0.28", "websockets>=15",
                       "pydantic>=2.7", "rich>=13", "jsonschema>=4.18")
# What the six original environments import: numpy (connect4, maze), matplotlib (maze), chess + moonfish (chess),
# reasoning-gym (reasoning_gym); wildfire needs only the standard library.
BASE_REQUIREMENTS = ("reasoning-gym==0.1.25", "chess", "moonfish", "numpy", "matplotlib")


@dataclass
class Case:
    name: str
    env_class: str  # MODULE:CLASS, importable from `root` inside the checkout
    tasks: list[dict[str, Any]]
    player: players.Rule
    legal: players.Legal  # the legal values at a turn, from knowledge of the environment (None: free text)
    max_steps: int
    check: players.Check | None = None  # for an environment that takes an illegal move silently: why a reply is none
    invalid_flags_in_state: bool = False  # the environment keeps its invalid-move flag in state() (textarena)
    per_family: int = 2
    family_field: str = "tier"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    classes: tuple[str, str] | None = None  # (action, observation) MODULE:CLASS when the class does not name them
    app: str = ""  # the environment's own FastAPI app (MODULE:ATTRIBUTE), served as is for the task-list path
    app_environ: dict[str, str] = field(default_factory=dict)  # the own app's settings (it reads no constructor kwargs)
    root: str = "."  # the folder of the checkout that makes MODULE importable (its authors' own way of running it)
    more_paths: tuple[str, ...] = ()  # further folders of the checkout put on the server's path (calendar's server/)
    venv: str = "base"  # the server virtualenv: "base" (.venv-compat) or a name of its own (.venv-compat-NAME)
    requires: tuple[str, ...] = BASE_REQUIREMENTS
    # files written into the work directory before serving (name -> text); "{work}" and "{checkout}" in env_kwargs
    # and app_environ values name those folders (dipg's dataset file)
    files: dict[str, str] = field(default_factory=dict)
    # entered before the server starts, in the folder the server will run in, left after it stops: (server python,
    # checkout, that folder) -> a context yielding (constructor arguments, server environment) to add (calendar's
    # database and the REST app its tools call)
    setup: Callable[[str, Path, Path], ContextManager[tuple[dict[str, Any], dict[str, str]]]] | None = None
    # why the environment reported the previous reply as failed, read from the observation that followed it (a
    # calendar tool call answered `success: false`); counted like the players' illegal replies
    failed: players.Failed | None = None
    vias: tuple[str, ...] = ("taskapi", "tasklist")
    no_own_app: str = ""  # why the task-list way (the environment's own app) is left out, when it is
    # the environment itself fails (an upstream bug): the row passes when the eval reports every episode as errored
    # (stop "error") and returns, rather than raising; the table says so
    env_fails: str = ""
    no_deps: tuple[str, ...] = ()  # installed after `requires` without their dependencies (a pin that conflicts)
    action_card: str = ""  # the action card given to the eval and the trainer (a file; "{work}" names the work dir)
    # files in the work directory an episode leaves behind (tbench2's answer.txt, written into the task's folder),
    # removed before each eval and the train so that no policy scores on what another one did
    scratch: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.app = self.app or self.env_class.split(":")[0].rsplit(".", 1)[0] + ".app:app"


def _reset_lines(prefix: str, count: int, reset: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return [{"split": "test", "id": f"{prefix}-{i}", "tier": 0, "reset": dict(reset or {})} for i in range(count)]


def cases() -> list[Case]:
    mid_game = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"
    openspiel = dict(venv="openspiel", requires=("open-spiel==2.0.2",))
    return [
        Case("echo_env", "envs.echo_env.server.echo_environment:EchoEnvironment", _reset_lines("echo", 2),
             players.echo_player, players.echo_tools, max_steps=4),
        Case("grid_world_env", "envs.grid_world_env.server.grid_world_environment:GridWorldEnvironment",
             _reset_lines("grid", 2), players.grid_world_player, players.constant(["UP", "DOWN", "LEFT", "RIGHT"]),
             max_steps=16),
        Case("connect4_env", "envs.connect4_env.server.connect4_environment:Connect4Environment",
             _reset_lines("connect4", 2), players.connect4_player, players.observed("legal_actions"), max_steps=42,
             classes=("envs.connect4_env.models:Connect4Action", "envs.connect4_env.models:Connect4Observation")),
        Case("maze_env", "envs.maze_env.server.maze_env_environment:MazeEnvironment", _reset_lines("maze", 2),
             players.maze_player, players.observed("legal_actions"), max_steps=200),
        Case("chess_env", "envs.chess_env.server.chess_environment:ChessEnvironment",
             [{"split": "test", "id": "start", "tier": 0, "reset": {}},
              {"split": "test", "id": "scholars-mate", "tier": 1, "reset": {"fen": mid_game}}],
             players.chess_player, players.observed("legal_moves"), max_steps=60, per_family=1,
             env_kwargs={"opponent": "random", "agent_color": "white"},
             classes=("envs.chess_env.models:ChessAction", "envs.chess_env.models:ChessObservation")),
        Case("reasoning_gym_env", "envs.reasoning_gym_env.server.reasoning_gym_environment:ReasoningGymEnvironment",
             [{"split": "test", "id": f"{name}-{i}", "dataset": name,
               "reset": {"dataset_name": name, "dataset_config": {}, "seed": i, "size": 1}}
              for name in ("basic_arithmetic", "leg_counting") for i in range(2)],
             players.reasoning_gym_player, players.free_text, max_steps=1, family_field="dataset"),
        # GuessTheNumber runs offline (Wordle needs nltk data); reset(seed) takes the seed and does not use it.
        Case("textarena_env", "textarena_env.server.environment:TextArenaEnvironment",
             [{"split": "test", "id": f"guess-{s}", "tier": 0, "seed": s, "reset": {"seed": s}} for s in range(2)],
             players.guess_the_number_player, players.guess_the_number_legal, max_steps=12,
             invalid_flags_in_state=True,
             env_kwargs={"env_id": "GuessTheNumber-v0", "download_nltk": False},
             app_environ={"TEXTARENA_ENV_ID": "GuessTheNumber-v0", "TEXTARENA_DOWNLOAD_NLTK": "0"},
             root="envs", venv="textarena", requires=("textarena==0.7.4",)),
        Case("wildfire_env", "envs.wildfire_env.server.wildfire_environment:WildfireEnvironment",
             _reset_lines("wildfire", 2), players.wildfire_player, players.constant(players.WILDFIRE_ACTIONS),
             max_steps=24, check=players.wildfire_check, app_environ={"WILDFIRE_WIDTH": "32", "WILDFIRE_HEIGHT": "32"}),
        Case("snake_env", "server.snake_environment:SnakeEnvironment", _reset_lines("snake", 2), players.snake_player,
             players.constant(players.SNAKE_ACTIONS), max_steps=40, root="envs/snake_env", venv="snake",
             requires=("marlenv==1.0.1", "gym==0.24.1", "numpy<2", "Pillow>=10")),
        Case("openspiel_env (catch)", "envs.openspiel_env.server.openspiel_environment:OpenSpielEnvironment",
             _reset_lines("catch", 2), players.openspiel_player, players.observed("legal_actions"), max_steps=12,
             env_kwargs={"game_name": "catch"}, app_environ={"OPENSPIEL_GAME": "catch"}, **openspiel),
        Case("openspiel_env (tic_tac_toe)", "envs.openspiel_env.server.openspiel_environment:OpenSpielEnvironment",
             _reset_lines("tic-tac-toe", 2), players.openspiel_player, players.observed("legal_actions"), max_steps=9,
             env_kwargs={"game_name": "tic_tac_toe"}, app_environ={"OPENSPIEL_GAME": "tic_tac_toe"}, **openspiel),
        # coding_env's reset takes no task and it never ends an episode: the steps are cut off at max_steps
        Case("coding_env", "coding_env.server.python_codeact_env:PythonCodeActEnv", _reset_lines("coding", 2),
             players.coding_player, players.free_text, max_steps=4, root="envs", venv="coding",
             classes=("coding_env.models:CodeAction", "coding_env.models:CodeObservation"),
             requires=("smolagents>=1.22.0,<2",)),
        # calendar_env's action is a plain one, {action_type: "ListToolsAction" | "ToolCallAction", tool_name,
        # arguments}, not openenv's MCP CallToolAction; its tools act on a SQLite database in the server's working
        # folder, which its own app seeds at /reset and the class never does: the script seeds it once before serving
        Case("calendar_env", "envs.calendar_env.server.calendar_environment:CalendarEnvironment",
             _reset_lines("calendar", 2), players.calendar_player, players.constant(players.CALENDAR_ACTION_TYPES),
             max_steps=4, more_paths=("envs/calendar_env/server",), venv="calendar",
             requires=("sqlalchemy>=2", "python-dateutil"),
             setup=calendar_backend, failed=players.calendar_failed, vias=("taskapi",),
             no_own_app="its own app (server/main.py) serves HTTP /reset and /step of its own, no /ws, which the eval "
                        "plays episodes over"),
        # repl_env: the action's `code` is the content field; the task arrives in reset(task_prompt=, context=,
        # expected_answer=) and an episode ends when the code prints FINAL(answer) (scored by exact match)
        Case("repl_env", "envs.repl_env.server.repl_environment:REPLEnvironment",
             [{"split": "test", "id": f"repl-{i}", "tier": 0,
               "reset": {"task_prompt": question, "expected_answer": answer}}
              for i, (question, answer) in enumerate(players.REPL_QUESTIONS)],
             players.repl_player, players.free_text, max_steps=4, check=players.python_check, venv="repl",
             # smolagents runs the code; its own app imports gradio for its web tab (huggingface_hub comes with it,
             # for llm_query, which needs a token and the network and is never called here)
             requires=("smolagents>=1.22.0,<2", "gradio")),
        # dipg_safety_env fails every step inside the environment (step() returns openenv's client-side StepResult,
        # which the server cannot serialise: 'StepResult' object has no attribute 'model_dump'); its constructor takes
        # 21 required arguments (the script passes its own app's defaults and a two-line dataset it writes)
        Case("dipg_safety_env", "envs.dipg_safety_env.server.dipg_environment:DIPGEnvironment",
             _reset_lines("dipg", 10), players.dipg_player, players.free_text, max_steps=1, per_family=10,
             venv="dipg", requires=(), files={"dipg_dataset.jsonl": players.DIPG_DATASET},
             env_kwargs={"dataset_path": "{work}/dipg_dataset.jsonl", **players.DIPG_SETTINGS},
             app_environ={"DIPG_DATASET_PATH": "{work}/dipg_dataset.jsonl"},
             env_fails="every step fails inside the environment ('StepResult' object has no attribute 'model_dump', "
                       "an upstream bug at OpenEnv 685de411)"),
        # tbench2_env: Terminal-Bench 2 tasks run locally (camel-ai's TerminalToolkit, no Docker); the task repository
        # is a download, so the script writes two tasks of its own in its layout (instruction.md, task.toml,
        # tests/test_outputs.py) and resets by task_id. Its schema states no value of action_type, so the eval is
        # given the action card docs/openenv.md gives a new user for it (its "Action cards" section)
        Case("tbench2_env", "tbench2_env.server.tbench2_env_environment:Tbench2Environment",
             [{"split": "test", "id": task, "tier": 0, "reset": {"task_id": task}} for task in TBENCH2_TASKS],
             players.tbench2_player, players.constant(players.TBENCH2_ACTION_TYPES), max_steps=4, root="envs",
             venv="tbench2", requires=("camel-ai>=0.2.90",), files={**tbench2_task_files(), "tbench2-card.toml": docs_card()},
             env_kwargs={"tasks_dir": "{work}/tb2-tasks", "output_dir": "{work}/tb2-runs"},
             app_environ={"TB2_TASKS_DIR": "{work}/tb2-tasks", "TB2_OUTPUT_DIR": "{work}/tb2-runs"},
             action_card="{work}/tbench2-card.toml", scratch=tuple(f"tb2-tasks/{t}/answer.txt" for t in TBENCH2_TASKS)),
        # finrl_env: its constructor takes FinRL's class and a config holding a DataFrame, so the Task API way serves
        # a function (scripts/compat_factories.py) through `serve MODULE:FUNCTION`; its own app reads the same config
        # file from FINRL_CONFIG_PATH. Its reset takes no task: every task is the same 10-day market of one stock
        Case("finrl_env", "compat_factories:finrl_environment", _reset_lines("finrl", 2), players.finrl_player,
             players.free_text, max_steps=12, app="envs.finrl_env.server.app:app", more_paths=(str(ROOT / "scripts"),),
             classes=("envs.finrl_env.models:FinRLAction", "envs.finrl_env.models:FinRLObservation"),
             venv="finrl", requires=FINRL_REQUIREMENTS, no_deps=("alpaca-trade-api>=3.0.0",),
             files={"finrl_prices.csv": FINRL_PRICES, "finrl_config.json": finrl_config()},
             env_kwargs={"config_path": "{work}/finrl_config.json"},
             app_environ={"FINRL_CONFIG_PATH": "{work}/finrl_config.json"}),
    ]


# ---- tbench2_env's local tasks and the docs' card ---------------------------------------------------------------
TBENCH2_TASKS = {"write-hello": "hello", "write-world": "world"}


def tbench2_task_files() -> dict[str, str]:
    """Two tasks in Terminal-Bench 2's layout: the instruction gives the command that does the task; the test checks
    the file it writes (run by the environment's `evaluate` with `python -m pytest -q tests`)."""
    files = {}
    for task, word in TBENCH2_TASKS.items():
        folder = f"tb2-tasks/{task}"
        files[f"{folder}/instruction.md"] = (f"Create a file named answer.txt in the task's folder holding the word {word}: "
                                             f"run `echo {word} > answer.txt`, then evaluate to run the task's tests.\n")
        files[f"{folder}/task.toml"] = '[verifier]\ntimeout_sec = 120.0\n'
        files[f"{folder}/tests/test_outputs.py"] = (
            "from pathlib import Path\n\n\n"
            "def test_answer_holds_the_word():\n"
            f"    assert (Path(__file__).parents[1] / 'answer.txt').read_text().strip() == {word!r}\n")
    return files


def docs_card() -> str:
    """The action card docs/openenv.md gives a new user for tbench2_env (the TOML block after "For tbench2_env:")."""
    text = (ROOT / "docs" / "openenv.md").read_text()
    found = re.search(r"For tbench2_env:\n\n```toml\n(?P<card>.*?)```", text, re.DOTALL)
    if found is None:
        raise RuntimeError("docs/openenv.md gives no action card for tbench2_env (\"For tbench2_env:\" and a toml block)")
    return found.group("card")


# ---- finrl_env's market: one stock, 10 days, a steady rise ----------------------------------------------------------
# finrl_env's pyproject pins (all imported when FinRL's package is); alpaca-trade-api pins websockets<11, which
# openenv needs at 15 or later: installed without its dependencies (as the environment's own uv override does)
FINRL_REQUIREMENTS = ("finrl==0.3.7", "pandas==2.0.3", "numpy==1.24.3", "gymnasium==0.29.1", "stable-baselines3==2.1.0",
                      "matplotlib==3.7.2", "stockstats==0.6.2", "exchange_calendars>=4.5,<4.6", "wrds>=3.1,<3.2",
                      "yfinance==0.2.28", "torch", "msgpack", "deprecation", "websocket-client", "aiohttp", "PyYAML")
FINRL_DAYS = 10
FINRL_PRICES = "date,tic,close,high,low,open,volume,macd,rsi_30,cci_30,dx_30\n" + "".join(
    f"2020-01-{day + 1:02d},SAMPLE,{100 + 2 * day},{102 + 2 * day},{98 + 2 * day},{100 + 2 * day},1000000,0.5,60.0,50.0,20.0\n"
    for day in range(FINRL_DAYS))


def finrl_config() -> str:
    """Its own app's sample configuration (server/app.py) over the CSV above."""
    return json.dumps({"data_path": "{work}/finrl_prices.csv", "stock_dim": 1, "hmax": 100, "initial_amount": 100000,
                       "num_stock_shares": [0], "buy_cost_pct": [0.001], "sell_cost_pct": [0.001],
                       "reward_scaling": 1e-4, "state_space": 7, "action_space": 1,
                       "tech_indicator_list": ["macd", "rsi_30", "cci_30", "dx_30"]})


@contextlib.contextmanager
def calendar_backend(python: str, checkout: Path, folder: Path) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    """What calendar_env's class needs to run a tool, in the server's folder: its tools are HTTP calls to its own REST
    app (`http://localhost:$API_PORT`, default 8004), over a SQLite database in ./mcp_databases.

    Seeds the database with its default seed data by its own app's code (`MCPHTTPEnvServer._reset_database`, what its
    /reset runs; the class's reset never seeds), serves its own app (server/app.py) beside the class on a free port,
    and yields the constructor's `auth_token` (the first seeded user's, what its own app passes from
    DEFAULT_AUTH_TOKEN) and the class server's API_PORT. Without the token every tool call fails with "Access token is
    required and no users are available for fallback": the class's fallback, `get_first_user_token`, reads
    `static_token` from a user record that leaves it out. Without the app: "Request Error: All connection attempts
    failed"."""
    program = ("import json, types\n"
               "from openenv_wrapper.config import get_session_manager_class\n"
               "from openenv_wrapper.custom_http_server import MCPHTTPEnvServer\n"
               "done = MCPHTTPEnvServer._reset_database(types.SimpleNamespace(session_manager=get_session_manager_class()()), 'default')\n"
               "print(json.dumps(done))\n"
               "raise SystemExit(0 if done.get('success') else 1)\n")
    server = checkout / "envs" / "calendar_env" / "server"
    environ = {**os.environ, "PYTHONPATH": str(server)}
    done = subprocess.run([python, "-c", program], cwd=folder, env=environ, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"seeding calendar_env's database failed:\n{(done.stderr or done.stdout)[-1500:]}")
    with contextlib.closing(sqlite3.connect(folder / "mcp_databases" / "calendar_default.sqlite")) as db:
        token = db.execute("SELECT static_token FROM users ORDER BY rowid LIMIT 1").fetchone()
    if not token:
        raise RuntimeError("calendar_env's seeded database has no user")
    with local_app("app:app", python=python, paths=[server], startup_timeout=300,
                   log_file=folder.with_name(folder.name.replace("server-folder", "rest-app.log"))) as url:
        yield {"auth_token": token[0]}, {"API_PORT": url.rsplit(":", 1)[1]}


@contextlib.contextmanager
def nothing_to_prepare(python: str, checkout: Path, folder: Path) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    yield {}, {}


# ---- server interpreters ------------------------------------------------------------------------------------
def server_python(case: Case, override: str | None, console: Console) -> str:
    """The interpreter that serves `case`: `override`, or its virtualenv, made (or remade when its requirements
    changed) with openenv 0.10.0 and what the environment imports."""
    if override:
        return override
    venv = ROOT / (".venv-compat" if case.venv == "base" else f".venv-compat-{case.venv}")
    requirements = [*SERVER_REQUIREMENTS, *case.requires]
    stamp = hashlib.sha256("\n".join([*requirements, *(f"--no-deps {r}" for r in case.no_deps)]).encode()).hexdigest()[:16]
    python = venv / "bin" / "python"
    if not (venv / ".stamp").is_file() or (venv / ".stamp").read_text().strip() != stamp:
        console.print(f"making {venv.name} ({' '.join(case.requires) or 'openenv only'}; a few minutes) ...")
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        done = subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"pip install into {venv} failed:\n{(done.stderr or done.stdout)[-2000:]}")
        if case.no_deps:
            done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", *case.no_deps],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"pip install --no-deps into {venv} failed:\n{(done.stderr or done.stdout)[-2000:]}")
        (venv / ".stamp").write_text(stamp + "\n")
    return str(python)


# ---- policies -------------------------------------------------------------------------------------------------
class ScriptedPolicy:
    """An eval `Policy` whose replies come from a rule reading the messages; records what the first prompt of each
    episode was like (its text, its size, whether the values the prompt states are the legal ones) and counts the
    replies that were no legal move but that the environment took without an error (:attr:`illegal`): the prompt
    reader's picks outside the legal values, and for an environment with a ``check`` every reply it rejects. A reply
    the client or server refused is the eval's invalid action, counted there: the next message in that episode is
    the eval's feedback, and the reply is taken off this count; an episode's last reply, which no message follows,
    comes off in :meth:`settle` when the eval ended that episode as ``invalid_action`` (refused, or flagged by the
    environment: textarena's second repeated guess)."""

    def __init__(self, rule: players.Rule, legal: players.Legal, check: players.Check | None = None, *,
                 reader: bool = False, failed: players.Failed | None = None):
        self.rule, self.legal, self.check, self.reader, self.failed = rule, legal, check, reader, failed
        self.first_prompts: list[list[dict]] = []
        self.first_prompt_chars: list[int] = []
        self.shown: list[str] = []
        self.illegal = 0
        self.notes: list[str] = []  # why each counted reply was no legal move (for the work dir)
        # conversation so far, ending with a reply counted illegal -> its notes (episodes may play alike)
        self._pending: dict[str, list[str]] = {}

    async def complete(self, prompts: list[list[dict]]) -> list[str]:
        return [self._reply({"messages": messages}) for messages in prompts]

    def _reply(self, request: dict[str, Any]) -> str:
        messages = request["messages"]
        before = self._pending.get(_key(messages[:-1]))
        if before:
            refused = before.pop()
            if str(messages[-1].get("content") or "").endswith(FEEDBACK_END):
                self.illegal -= 1  # the eval counted it: the client or the server refused it
                self.notes.remove(refused)
        first = len(players.user_texts(request)) == 1
        if self.failed is not None and not first and not before and messages[-2:-1] and messages[-2].get("role") == "assistant":
            failure = self.failed(request)
            if failure is not None:  # the environment took the previous reply and reported that it failed
                self.illegal += 1
                self.notes.append(f"turn {len(players.user_texts(request)) - 1}: {str(messages[-2].get('content'))[:120]!r}: "
                                  f"the environment reported it failed: {failure}")
        reading = players.read_prompt(request) if first or self.reader else None
        truth = self.legal(request) if reading is not None else None
        if first:
            self.first_prompts.append(messages)
            self.first_prompt_chars.append(sum(len(str(m.get("content") or "")) for m in messages))
            self.shown.append(shown(reading.values, truth))
        reply = reading.reply if self.reader else self.rule(request)
        why = None
        if self.reader and truth is not None and (reading.pick is None or str(reading.pick).casefold() not in {t.casefold() for t in truth}):
            why = f"the pick {reading.pick!r} is none of the legal values"
        elif self.check is not None:
            why = self.check(request, reply)
        if why is not None:
            note = f"turn {len(players.user_texts(request))}: {reply[:120]!r}: {why}"
            self.illegal += 1
            self.notes.append(note)
            self._pending.setdefault(_key([*messages, {"role": "assistant", "content": reply}]), []).append(note)
        return reply

    def settle(self, results: list[Any]) -> None:
        """Take off this count the last replies the eval counted: those of episodes it stopped as invalid_action."""
        for result in results:
            if result.stop != "invalid_action":
                continue
            last = next((notes for k, notes in self._pending.items() if notes and json.loads(k)[-1] == ["assistant", result.reply]), None)
            if last:
                self.notes.remove(last.pop())
                self.illegal -= 1


# the eval's feedback after a refused reply ends so (its rules' default feedback, "{problem} Try again; ...")
FEEDBACK_END = DEFAULT_RULES.feedback.split("{problem}")[-1].strip()


def _key(messages: list[dict]) -> str:
    return json.dumps([[m.get("role"), m.get("content")] for m in messages])


def shown(found: list[Any], truth: list[str] | None) -> str:
    """Whether a prompt states the legal values: "yes", "no", "K of N" (some), "free text" (any text is an action)."""
    if truth is None:
        return "free text"
    legal = {t.casefold() for t in truth}
    stated = {str(v).casefold() for v in found}
    hits, extra = len(stated & legal), len(stated - legal)
    text = "yes" if hits == len(legal) else "no" if hits == 0 else f"{hits} of {len(legal)}"
    return text + (f", {extra} not legal" if extra else "")


# ---- one row ----------------------------------------------------------------------------------------------------
@dataclass
class Row:
    name: str
    via: str
    episodes: int = 0
    completed: int = 0
    done: int = 0
    invalid: int = 0
    errored: int = 0  # episodes the environment failed (stop "error"), legal-move player
    stopped: str = ""  # why the eval stopped before playing every task (the environment failed episode after episode)
    mean_reward: float = 0.0
    reset_check: str = ""
    warnings: int = 0
    prompt_chars: int = 0
    legal_shown: str = ""
    reader_episodes: int = 0
    reader_completed: str = ""
    reader_invalid: int = 0
    reader_errored: int = 0
    reader_reward: float = 0.0
    seconds: float = 0.0
    error: str = ""
    env_fails: str = ""  # the case's expected environment failure, if any
    train: str = ""  # what --train-steps found: "2 steps, 4 episodes: ..." or "FAILED: ..."
    never_ended: bool = False  # the eval warned that no episode ended before the step limit (and none was invalid)

    @property
    def compatible(self) -> bool:
        return (not self.error and self.episodes > 0 and not self.invalid and self.completed == self.episodes
                and self.reset_check != "refused" and not self.train.startswith("FAILED"))

    @property
    def readable(self) -> bool:
        return self.compatible and not self.reader_invalid and self.reader_completed == f"{self.episodes}/{self.episodes}"

    @property
    def failed_as_expected(self) -> bool:
        """An environment expected to fail on its own (`Case.env_fails`) did, and the package reported it: the eval
        returned (no exception) with every episode of both policies ended as errored (stop "error"), and a train,
        if asked for, ran."""
        return (bool(self.env_fails) and not self.error and self.episodes > 0 and self.errored == self.episodes
                and self.reader_episodes > 0 and self.reader_errored == self.reader_episodes
                and not self.train.startswith("FAILED"))


VIA = {"taskapi": "Task API (serve --tasks)", "tasklist": "task list (eval --tasks)"}


def _filled(value: str, work: Path, checkout: Path) -> str:
    return value.replace("{work}", str(work)).replace("{checkout}", str(checkout))


def _serve(case: Case, via: str, checkout: Path, python: str, task_file: Path, log: Path, work: Path,
           prepared: tuple[dict[str, Any], dict[str, str]]):
    """The Task API path serves the class through `openenv-prime serve MODULE:CLASS --tasks`; the task-list path
    serves the environment's own app, untouched, under uvicorn. Both through openenv_prime.envs.launch."""
    paths = [(checkout / case.root).resolve(), *((checkout / p).resolve() for p in case.more_paths)]
    if via == "tasklist":
        environ = {k: _filled(v, work, checkout) for k, v in {**case.app_environ, **prepared[1]}.items()}
        return local_app(case.app, python=python, paths=paths, environ=environ, startup_timeout=300, log_file=log)
    kwargs = {k: _filled(v, work, checkout) if isinstance(v, str) else v for k, v in {**case.env_kwargs, **prepared[0]}.items()}
    extra = ["--env-kwargs", json.dumps(kwargs)] if kwargs else []
    if case.classes:
        extra += ["--action", case.classes[0], "--observation", case.classes[1]]
    return local_server(case.env_class, tasks=task_file, paths=paths, python=python, extra_args=extra,
                        environ=prepared[1], startup_timeout=300, log_file=log)


def _eval(case: Case, url: str, task_file: Path | None, policy: ScriptedPolicy, check_reset: bool, work: Path):
    _clear_scratch(case, work)
    config = EvalConfig(action_card=_filled(case.action_card, work, work) or None, base_url=url, tasks=str(task_file) if task_file else None, split="test",
                        per_family=case.per_family, max_steps=case.max_steps, family_field=case.family_field,
                        max_concurrency=4, timeout=120, check_reset=check_reset,
                        invalid_flags_in_state=case.invalid_flags_in_state)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reset check's notes are in result.warnings
        return run_eval(config, policy)


def _clear_scratch(case: Case, work: Path) -> None:
    for name in case.scratch:
        (work / name).unlink(missing_ok=True)


def run_case(case: Case, via: str, checkout: Path, python: str, work: Path, train_steps: int = 0) -> Row:
    row = Row(case.name, VIA[via], env_fails=case.env_fails)
    started = time.perf_counter()
    stem = case.name.replace(" ", "_").replace("(", "").replace(")", "")
    task_file = work / f"{stem}.jsonl"
    task_file.write_text("".join(json.dumps(task) + "\n" for task in case.tasks))
    for name, text in case.files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(_filled(text, work, checkout))
    # the server runs in a folder of its own in the work directory: an environment that keeps files in its working
    # folder (calendar's ./mcp_databases) writes them there, not into the repository
    folder = work / f"{stem}.{via}.server-folder"
    folder.mkdir(exist_ok=True)
    policies = dict(check=case.check, failed=case.failed)
    try:
        log = work / f"{stem}.{via}.server.log"
        with (contextlib.chdir(folder), (case.setup or nothing_to_prepare)(python, checkout, folder) as prepared,
              _serve(case, via, checkout, python, task_file, log, work, prepared) as url):
            given = task_file if via == "tasklist" else None
            legal_moves = ScriptedPolicy(case.player, case.legal, **policies)
            try:
                result = _eval(case, url, given, legal_moves, True, work)
            except ResetIgnoredError as refused:
                row.reset_check = "refused"
                (work / f"{stem}.{via}.reset-check.txt").write_text(str(refused) + "\n")
                legal_moves = ScriptedPolicy(case.player, case.legal, **policies)
                result = _eval(case, url, given, legal_moves, False, work)
            reader = ScriptedPolicy(case.player, case.legal, reader=True, **policies)
            read = _eval(case, url, given, reader, False, work)
            if train_steps:
                row.train = train(case, url, given, work / f"{stem}.{via}.train", train_steps)
    except (ServerStartError, OpenEnvError, ValueError, KeyError, RuntimeError, subprocess.SubprocessError) as error:
        row.error = f"{type(error).__name__}: {error}"[-1500:]
        row.seconds = time.perf_counter() - started
        return row
    legal_moves.settle(result.results)
    reader.settle(read.results)
    write_json(work / f"{stem}.{via}.legal-moves.json", report_dict(result))
    write_json(work / f"{stem}.{via}.prompt-reader.json", report_dict(read))
    for policy, name in ((legal_moves, "legal-moves"), (reader, "prompt-reader")):
        (work / f"{stem}.{via}.{name}.turn-1-prompt.json").write_text(json.dumps(policy.first_prompts[:1], indent=1) + "\n")
        if policy.notes:
            (work / f"{stem}.{via}.{name}.illegal.txt").write_text("\n".join(policy.notes) + "\n")
    results = result.results
    row.episodes = len(results)
    row.done = sum(r.done for r in results)
    row.completed = sum(r.done or r.truncated for r in results)
    row.invalid = sum(r.invalid_actions for r in results) + legal_moves.illegal
    row.errored = sum(r.stop == "error" for r in results)
    row.stopped = result.stopped or ""
    row.mean_reward = result.mean_reward
    row.warnings = len(result.warnings)
    # the eval's note that no episode ended before the step limit with no invalid reply is no reset check's: it
    # goes beside "done by env" (coding_env and calendar_env never end an episode)
    row.never_ended = any(note.startswith(NEVER_ENDED) for note in result.warnings)
    checks = [note for note in result.warnings if not note.startswith(NEVER_ENDED)]
    if row.reset_check != "refused":
        row.reset_check = "; ".join(reset_warning_kind(note) for note in checks) or "passed"
    if result.warnings:
        (work / f"{stem}.{via}.reset-check.txt").write_text("\n\n".join(result.warnings) + "\n")
    row.prompt_chars = max(legal_moves.first_prompt_chars, default=0)
    row.legal_shown = "; ".join(sorted(set(legal_moves.shown))) or "-"
    row.reader_episodes = len(read.results)
    row.reader_completed = f"{sum(r.done or r.truncated for r in read.results)}/{len(read.results)}"
    row.reader_invalid = sum(r.invalid_actions for r in read.results) + reader.illegal
    row.reader_errored = sum(r.stop == "error" for r in read.results)
    row.reader_reward = read.mean_reward
    row.seconds = time.perf_counter() - started
    return row


NEVER_ENDED = "no episode ended before the step limit"  # failures.never_ending's words


def reset_warning_kind(note: str) -> str:
    """The reset check's warnings in a word: one task started differently in fresh sessions (the environment's own
    randomness), or different tasks all started alike."""
    if note.startswith("task 0 "):
        return "warned: random"
    return "warned: alike" if note.startswith("tasks ") else "warned"


# ---- a short MLX train on the same server (--train-steps) -------------------------------------------------------
def train(case: Case, url: str, task_file: Path | None, out: Path, steps: int) -> str:
    """Train a tiny random-weight model (`build_tiny_model`, no download) for `steps` GRPO steps on the served
    environment with the MLX trainer (what `openenv-prime train` runs), 2 rollouts of 1 task a step, no eval: a check
    that the trainer plays the environment's episodes to the end, errored ones included, without stopping. Returns
    what its log says, or "FAILED: ..." with the error."""
    from openenv_prime.mlx_trainer.config import config_from_dict
    from openenv_prime.mlx_trainer.model.sources import build_tiny_model
    from openenv_prime.mlx_trainer.training.loop import train as mlx_train

    _clear_scratch(case, out.parent)
    model = out / "tiny-model"
    if not model.is_dir():
        build_tiny_model(model)
    environment = {"base_url": url, "train_split": "test", "test_split": "test", "family_field": case.family_field,
                   "check_reset": False, "max_steps": case.max_steps,
                   "invalid_flags_in_state": case.invalid_flags_in_state, "timeout": 120}
    if case.action_card:
        environment["action_card"] = _filled(case.action_card, out.parent, out.parent)
    if task_file is not None:
        environment["tasks"] = str(task_file)
    config = config_from_dict({
        "seed": 0, "steps": steps, "plot": False, "out": str(out / "run"), "model": {"path": str(model)},
        "grpo": {"group_size": GROUP_SIZE, "tasks_per_step": 1, "max_new_tokens": 16},
        "environment": environment, "eval": {"enabled": False}, "checkpoint": {"every": steps},
    })
    try:
        state = mlx_train(config, out / "run", progress=False).state
    except Exception as error:  # noqa: BLE001 - any failure is the finding, shown in the table
        return f"FAILED: {type(error).__name__}: {error}"[:300]
    logged = [json.loads(line) for line in (out / "run" / "log.jsonl").read_text().splitlines() if line.strip()]
    logged = [entry for entry in logged if entry.get("type") == "step"]
    episodes = sum(entry.get("groups", 0) for entry in logged) * GROUP_SIZE
    errored = sum(entry.get("errored_episodes", 0) for entry in logged)
    invalid = sum(entry.get("invalid_actions", 0) for entry in logged)
    return f"{state.step} steps, {episodes} episodes: {errored} errored, {invalid} invalid actions"


GROUP_SIZE = 2


# ---- the table ----------------------------------------------------------------------------------------------------
COLUMNS = ("environment", "tasks via", "episodes", "completed", "done by env", "invalid actions", "errored",
           "mean reward", "reset check", "prompt chars at turn 1", "legal values shown", "prompt reader: completed",
           "prompt reader: invalid", "prompt reader: errored", "prompt reader: mean reward", "seconds")
LEFT = ("environment", "tasks via", "reset check", "legal values shown", "errored", "prompt reader: errored", "train")


def _cells(r: Row, with_train: bool = False) -> list[str]:
    errored = str(r.errored) + (" (stopped)" if r.stopped else "") + (" (expected)" if r.env_fails and r.errored else "")
    cells = [r.name, r.via if not r.error else "FAILED", str(r.episodes), str(r.completed),
             str(r.done) + (" (warned: never ended)" if r.never_ended else ""), str(r.invalid),
             errored, f"{r.mean_reward:.3f}", r.reset_check, f"{r.prompt_chars:,}", r.legal_shown, r.reader_completed,
             str(r.reader_invalid), str(r.reader_errored), f"{r.reader_reward:.3f}", f"{r.seconds:.1f}"]
    return cells + ([r.train or "-"] if with_train else [])


def table(rows: list[Row]) -> Table:
    with_train = any(r.train for r in rows)
    out = Table(title="OpenEnv environments through openenv-prime's eval (legal-move players and the prompt reader)")
    for column in COLUMNS + (("train",) if with_train else ()):
        out.add_column(column, justify="left" if column in LEFT else "right")
    for r in rows:
        out.add_row(*_cells(r, with_train))
    return out


def markdown(rows: list[Row]) -> str:
    with_train = any(r.train for r in rows)
    columns = COLUMNS + (("train",) if with_train else ())
    lines = ["| " + " | ".join(columns) + " |",
             "|" + "|".join("---" if c in LEFT else "---:" for c in columns) + "|"]
    lines += ["| " + " | ".join(_cells(r, with_train)) + " |" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=Path, help="an OpenEnv checkout (the folder holding envs/)")
    parser.add_argument("--server-python", default=os.environ.get("OPENENV_COMPAT_PYTHON"),
                        help="serve every environment from this interpreter (default: one virtualenv per environment's "
                             "needs, made on first use; env OPENENV_COMPAT_PYTHON)")
    parser.add_argument("--only", nargs="+", default=None, help="only these environments (e.g. maze_env snake_env)")
    parser.add_argument("--work-dir", type=Path, default=None, help="keep task lists, server logs and reports here")
    parser.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    parser.add_argument("--via", nargs="+", choices=sorted(VIA), default=["taskapi", "tasklist"],
                        help="how tasks reach the eval: the Task API added by `openenv-prime serve MODULE:CLASS --tasks`, "
                             "and/or the environment's own server with a task list given to the eval (default: both)")
    parser.add_argument("--train-steps", type=int, default=0, metavar="N",
                        help="also train a tiny random-weight model N steps with the MLX trainer on each served "
                             "environment (2 rollouts of 1 task a step; needs mlx; about a minute a row): the trainer "
                             "must not stop (default 0: no training)")
    args = parser.parse_args(argv)
    checkout = args.checkout.resolve()
    if not (checkout / "envs").is_dir():
        parser.error(f"{checkout} has no envs/ folder; pass the root of an OpenEnv checkout")
    if args.train_steps < 0:
        parser.error("--train-steps must be 0 or more")
    chosen = [c for c in cases() if args.only is None or c.name in args.only or c.name.split(" ")[0] in args.only]
    if not chosen:
        parser.error(f"--only {args.only} names none of {[c.name for c in cases()]}")
    work = (args.work_dir or Path(tempfile.mkdtemp(prefix="openenv-compat-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    console = Console(width=240)
    rows = []
    for case in chosen:
        vias = [via for via in args.via if via in case.vias]
        for via in set(args.via) - set(case.vias):
            console.print(f"{case.name}: not served via {VIA[via]}: {case.no_own_app}", markup=False)
        if not vias:
            continue
        try:
            python = server_python(case, args.server_python, console)
        except (RuntimeError, subprocess.CalledProcessError) as error:
            rows += [Row(case.name, VIA[via], error=str(error)) for via in vias]
            console.print(f"{case.name}: {error}", markup=False)
            continue
        for via in vias:
            console.print(f"[bold]{case.name}[/bold] via {VIA[via]} ...")
            rows.append(run_case(case, via, checkout, python, work, args.train_steps))
            if rows[-1].error:
                console.print(f"{case.name} failed: {rows[-1].error}", markup=False)
    console.print(table(rows))
    if args.markdown:
        print(markdown(rows))
    console.print(f"task lists, server logs, eval reports and reset-check messages: {work}")
    expected = [r for r in rows if r.env_fails and not r.compatible and r.failed_as_expected]
    bad = [f"{r.name} ({r.via})" for r in rows if not r.compatible and r not in expected]
    unreadable = [f"{r.name} ({r.via})" for r in rows if r.compatible and not r.readable]
    for r in expected:
        console.print(f"expected environment failure, reported by the package (not counted against it): {r.name} "
                      f"({r.via}): {r.env_fails}; {r.errored} of {r.episodes} episodes errored"
                      + (f"; the eval stopped: {r.stopped[:600]}" if r.stopped else ""), markup=False)
    for r in rows:
        if r.env_fails and r.compatible:
            console.print(f"{r.name} ({r.via}) was expected to fail on its own ({r.env_fails}) and did not: the "
                          "upstream bug may be fixed; judged as any other row", markup=False)
    if bad:
        console.print(f"[red]not fully compatible with the legal-move players:[/red] {', '.join(bad)}")
    if unreadable:
        console.print(f"[red]the prompt reader did not complete with 0 invalid actions:[/red] {', '.join(unreadable)}")
    return 1 if bad or unreadable else 0


if __name__ == "__main__":
    sys.exit(main())
