"""The players of the compatibility matrix (scripts/compat_players.py), fed the texts the eval shows (rendered by the
client from schemas and observations shaped like OpenEnv's environments): the legal-move players' moves are legal and
the search players finish; the prompt reader picks among the values a prompt states and replies in the format it
asks for. The matrix itself needs an OpenEnv checkout: `scripts/openenv-compat CHECKOUT`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import json

from openenv_prime.client import observation_to_text, reply_to_action
from openenv_prime.client.engine.episode_rules import DEFAULT_RULES
from openenv_prime.client.prompts.render import EpisodeProtocol
from openenv_prime.evaluation.result import TaskResult

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "compat_players.py"
spec = importlib.util.spec_from_file_location("compat_players", SCRIPT)
compat = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = compat  # dataclasses look their module up while the script loads
spec.loader.exec_module(compat)

# our own layout (1 = wall), cells as [col, row] like maze_env; the exit is the bottom-right cell
LAYOUT = ["0010000", "0110110", "0000100", "1110101", "0000101", "0111100", "0000010"]
MOVES = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}


def request(texts: list[str], system: str | None = None) -> dict:
    head = [{"role": "system", "content": system}] if system else []
    return {"messages": head + [{"role": "user", "content": t} for t in texts]}


def open_cell(col: int, row: int) -> bool:
    return 0 <= row < len(LAYOUT) and 0 <= col < len(LAYOUT[0]) and LAYOUT[row][col] == "0"


def test_maze_player_searches_its_way_out_with_legal_moves():
    here, previous, texts = [0, 0], [0, 0], []
    exit_cell = [len(LAYOUT[0]) - 1, len(LAYOUT) - 1]
    for _ in range(200):
        legal = [a for a, (dc, dr) in MOVES.items() if open_cell(here[0] + dc, here[1] + dr)]
        texts.append(observation_to_text({"legal_actions": legal, "current_position": here, "previous_position": previous, "metadata": {}}))
        move = int(compat.maze_player(request(texts)))
        assert move in legal
        previous, here = here, [here[0] + MOVES[move][0], here[1] + MOVES[move][1]]
        if here == exit_cell:
            break
    assert here == exit_cell


def test_grid_world_player_walks_to_the_goal():
    x = y = 0
    texts = [observation_to_text({"x": x, "y": y, "message": "Welcome to Grid World! Goal is at [4, 4]."})]
    for _ in range(8):
        move = compat.grid_world_player(request(texts))
        x, y = x + {"DOWN": 1, "UP": -1}.get(move, 0), y + {"RIGHT": 1, "LEFT": -1}.get(move, 0)
        texts.append(observation_to_text({"x": x, "y": y, "message": "Keep going..."}))
    assert (x, y) == (4, 4)


def test_board_game_players_pick_legal_moves():
    board = [[0] * 7 for _ in range(6)]
    text = observation_to_text({"board": board, "legal_actions": [0, 1, 2, 4, 5, 6], "metadata": {"next_player": 1}})
    assert compat.connect4_player(request([text])) == "2"
    fen = "r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4"
    moves = ["h5h4", "h5f7", "c4b5", "g1f3"]
    chess_text = observation_to_text({"fen": fen, "legal_moves": moves, "is_check": False, "result": None})
    assert compat.chess_player(request([chess_text])) == "h5f7"  # the capture


def test_reasoning_gym_player_answers_arithmetic_and_anything_else():
    assert compat.reasoning_gym_player(request(["Calculate 12 + 7 * 3 ="])) == "33"
    assert compat.reasoning_gym_player(request(["How many legs do 3 ducks have?"])) == "0"


def test_textarena_player_searches_by_the_hints():
    rules = "You have to guess the number between 1 and 20 within 10 turns. For example, [5]."
    texts = [rules]
    target, guess = 13, None
    for _ in range(6):
        guess = int(compat.guess_the_number_player(request(texts)).strip("[]"))
        if guess == target:
            break
        hint = "higher" if target > guess else "lower"
        texts.append(json.dumps({"content": f"{rules}\n[Player] [{guess}]\n[GAME] The target number is {hint}."}))
    assert guess == target


def test_wildfire_and_openspiel_players_answer_json_objects_with_legal_values():
    grid = [1] * 16
    grid[6] = 2  # row 1, column 2: x = 2, y = 1 (wildfire's index is y * width + x)
    text = observation_to_text({"grid": grid, "width": 4, "height": 4, "remaining_water": 3, "remaining_breaks": 0})
    assert text.startswith("grid (4 rows x 4 columns")  # the player reads the text grid the model is shown
    assert json.loads(compat.wildfire_player(request([text]))) == {"action": "water", "x": 2, "y": 1}
    dry = observation_to_text({"grid": grid, "width": 4, "height": 4, "remaining_water": 0, "remaining_breaks": 0})
    assert json.loads(compat.wildfire_player(request([dry]))) == {"action": "wait"}
    for reply in (compat.wildfire_player(request([text])), compat.wildfire_player(request([dry])), "wait"):
        assert compat.wildfire_check(request([text]), reply) is None
    for reply, why in [('{"action": "water"}', "without the cell's x and y"), ('{"action": "water", "x": 4, "y": 0}', "off the 4x4 grid"),
                       ('{"action": "break", "x": 0, "y": 0}', "none left"), ('{"action": "..."}', "none of break, water, wait")]:
        assert why in compat.wildfire_check(request([text]), reply)
    legal = observation_to_text({"info_state": [0.0] * 4, "legal_actions": [4, 7]})
    assert json.loads(compat.openspiel_player(request([legal]))) == {"action_id": 4}


# ---- the prompt reader, on prompts the client renders ------------------------------------------------------
ENUM_SCHEMA = {
    "$defs": {"MoveAction": {"enum": ["UP", "DOWN", "LEFT", "RIGHT"], "type": "string"}},
    "properties": {"metadata": {"type": "object"}, "action": {"$ref": "#/$defs/MoveAction"}},
    "required": ["action"], "type": "object",
}
COLUMN_SCHEMA = {"properties": {"column": {"type": "integer"}}, "required": ["column"], "type": "object"}
OBJECT_SCHEMA = {  # openspiel's shape: a required id, optional settings
    "properties": {"action_id": {"type": "integer"}, "game_name": {"type": "string", "default": "catch"}},
    "required": ["action_id"], "type": "object",
}
FREE_SCHEMA = {"properties": {"message": {"type": "string"}}, "required": ["message"], "type": "object"}


def _prompt(schema: dict, texts: list[str]) -> dict:
    return request(texts, EpisodeProtocol(schema).instructions("Play the game."))


def test_the_reader_picks_from_the_reply_formats_list_and_the_reply_is_an_action():
    asked = _prompt(ENUM_SCHEMA, [observation_to_text({"x": 0, "y": 0, "message": "Go."})])
    reading = compat.read_prompt(asked)
    assert reading.values == ["UP", "DOWN", "LEFT", "RIGHT"]
    assert reply_to_action(reading.reply, ENUM_SCHEMA) == {"action": "UP"}


def test_the_reader_prefers_the_legal_values_an_observation_shows():
    asked = _prompt(COLUMN_SCHEMA, [observation_to_text({"board": [[0] * 7] * 6, "legal_actions": [2, 3, 5]})])
    reading = compat.read_prompt(asked)
    assert reading.values == [2, 3, 5] and reply_to_action(reading.reply, COLUMN_SCHEMA) == {"column": 2}
    shaped = _prompt(OBJECT_SCHEMA, [observation_to_text({"info_state": [0.0, 1.0], "legal_actions": [1, 4]})])
    assert reply_to_action(compat.read_prompt(shaped).reply, OBJECT_SCHEMA) == {"action_id": 1}


def test_the_reader_calls_the_first_listed_tool_with_its_required_arguments():
    tools = "Tools you can call:\n- echo_message: Echo it.\n  input schema: " + json.dumps(
        {"properties": {"message": {"type": "string"}}, "required": ["message"], "type": "object"})
    reading = compat.read_prompt(request(["Ready.\n\n" + tools], "Call tools."))
    assert reading.values == ["echo_message"]
    assert json.loads(reading.reply) == {"tool": "echo_message", "arguments": {"message": "hello"}}


def test_the_reader_reads_a_stated_range_in_the_prompts_own_format_and_otherwise_admits_it_does_not_know():
    rules = "Guess the number between 1 and 20. Only a number in square brackets counts. For example, [5]."
    reading = compat.read_prompt(_prompt(FREE_SCHEMA, [rules]))
    assert reading.values[:2] == ["[1]", "[2]"] and len(reading.values) == 20 and reading.reply == "[1]"
    nothing = compat.read_prompt(_prompt(FREE_SCHEMA, ["What is the capital of France?"]))
    assert (nothing.values, nothing.pick, nothing.reply) == ([], None, "I do not know")
    unstated = compat.read_prompt(_prompt(OBJECT_SCHEMA, ["info_state: [0.0]"]))  # "a JSON value (integer)", no values
    assert (unstated.values, unstated.pick, unstated.reply) == ([], None, "I do not know")
    pair = {"properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a", "b"], "type": "object"}
    example = compat.read_prompt(_prompt(pair, ["Go."]))
    assert example.pick is None and json.loads(example.reply) == {"a": 0, "b": "..."}  # the prompt's own example


def _runner():
    script = SCRIPT.with_name("openenv_compat.py")
    runner_spec = importlib.util.spec_from_file_location("openenv_compat", script)
    runner = importlib.util.module_from_spec(runner_spec)
    sys.modules[runner_spec.name] = runner
    runner_spec.loader.exec_module(runner)
    return runner


def test_the_matrix_says_whether_a_prompt_states_the_legal_values_and_counts_the_readers_illegal_picks():
    import asyncio

    runner = _runner()
    assert runner.shown(["UP", "down", "LEFT", "RIGHT"], ["UP", "DOWN", "LEFT", "RIGHT"]) == "yes"
    assert runner.shown([], ["break", "water", "wait"]) == "no"
    assert runner.shown(["water", "fly"], ["break", "water", "wait"]) == "1 of 3, 1 not legal"
    assert runner.shown([], None) == "free text"
    policy = runner.ScriptedPolicy(compat.grid_world_player, compat.constant(["break", "water", "wait"]), reader=True)
    unstated = _prompt(OBJECT_SCHEMA, ["info_state: [0.0]"])
    listed = _prompt(ENUM_SCHEMA, ["x: 0\ny: 0"])
    replies = asyncio.run(policy.complete([unstated["messages"], listed["messages"]]))
    assert replies == ["I do not know", "UP"]
    assert policy.illegal == 2 and policy.shown == ["no", "no, 4 not legal"]  # neither pick is break/water/wait
    assert len(policy.notes) == 2 and "'UP' is none of the legal values" in policy.notes[1]
    assert policy.first_prompt_chars == [sum(len(m["content"]) for m in p["messages"]) for p in (unstated, listed)]
    # a counted reply the eval refused (its feedback follows) is the eval's invalid action, taken off this count
    refused = [*listed["messages"], {"role": "assistant", "content": "UP"},
               {"role": "user", "content": DEFAULT_RULES.feedback_text("'UP' is not an action")}]
    asyncio.run(policy.complete([refused]))
    assert policy.illegal == 2 and len(policy.notes) == 2  # UP off, the reply to the feedback (UP again) on
    # textarena's way: two episodes alike, each ending on a repeated guess the environment flags (no feedback follows)
    rules = "Guess the number between 1 and 20. For example, [5]."
    history = json.dumps({"content": f"{rules}\n[Player] [1]\n[GAME] The target number is higher."})
    guesses = runner.ScriptedPolicy(compat.guess_the_number_player, compat.guess_the_number_legal, reader=True)
    turn_two = [[{"role": "user", "content": rules}, {"role": "assistant", "content": "[1]"}, {"role": "user", "content": history}]] * 2
    assert asyncio.run(guesses.complete(turn_two)) == ["[1]", "[1]"] and guesses.illegal == 2  # [1] was guessed
    ended = TaskResult(key="guess-0", family="0", split="test", index=0, reward=0.6, success=False, reply="[1]",
                          steps=2, done=True, invalid_actions=1, stop="invalid_action")
    guesses.settle([ended, ended.model_copy(update={"key": "guess-1", "index": 1}), ended.model_copy(update={"stop": "done"})])
    assert guesses.illegal == 0 and guesses.notes == []  # the eval counted both
    legal = runner.ScriptedPolicy(compat.grid_world_player, compat.constant(["UP", "DOWN", "LEFT", "RIGHT"]))
    assert asyncio.run(legal.complete([listed["messages"]])) == ["DOWN"] and legal.shown == ["yes"] and legal.illegal == 0


def test_the_matrix_imports_nothing_from_tests_and_serves_through_launch():
    import ast as syntax

    for path in (SCRIPT, SCRIPT.with_name("openenv_compat.py")):
        tree = syntax.parse(path.read_text())
        imported = {n.module for n in syntax.walk(tree) if isinstance(n, syntax.ImportFrom)} | {
            a.name for n in syntax.walk(tree) if isinstance(n, syntax.Import) for a in n.names}
        assert not {m for m in imported if m and m.split(".")[0] == "tests"}, path
        assert "subprocess.Popen" not in path.read_text(), path  # servers start and stop in openenv_prime.envs.launch
    assert "openenv_prime.envs.launch" in imported


def test_the_reader_takes_the_values_a_docstring_states_from_the_prompts_the_client_writes():
    from tests.play.lookalike_envs import FireAction, SnakeAction  # wildfire's and snake's docstrings, in their shape

    fire_schema = FireAction.model_json_schema()
    fire = _prompt(fire_schema, [observation_to_text({"grid": [1] * 16, "width": 4, "height": 4})])
    assert '"action" (string, one of "break", "water", "wait"' in compat.system_text(fire)  # the format the reader reads
    reading = compat.read_prompt(fire)
    assert reading.values == ["break", "water", "wait"] and reading.pick == "break"
    assert reply_to_action(reading.reply, fire_schema)["action"] == "break"
    snake_schema = SnakeAction.model_json_schema()  # two cases, [0, 1, 2] and [0, 1, 2, 3, 4]: every case allows 0-2
    snake = compat.read_prompt(_prompt(snake_schema, [observation_to_text({"grid": [[0] * 4] * 4})]))
    assert snake.values == ["0", "1", "2"] and snake.reply == "0"  # typed as the reply format says (a JSON integer)
    assert reply_to_action(snake.reply, snake_schema)["action"] == 0
    bounded = {"properties": {"column": {"type": "integer", "minimum": 0, "maximum": 6}}, "required": ["column"], "type": "object"}
    column = compat.read_prompt(_prompt(bounded, ["Drop a disc."]))
    assert column.values == list(range(7)) and reply_to_action(column.reply, bounded) == {"column": 0}
    assert compat.read_prompt(request(["legal_players: [0]"], "Reply with anything.")).values == []  # players, not moves


class _Players:
    """An eval policy answering with one of the matrix's rules."""

    def __init__(self, rule):
        self.rule = rule

    async def complete(self, prompts: list[list[dict]]) -> list[str]:
        return [self.rule({"messages": messages}) for messages in prompts]


def test_the_reader_writes_a_program_where_the_prompt_says_the_reply_is_code_and_plays_as_the_legal_player(play_servers):
    from openenv.core.env_server.types import Action

    from openenv_prime.evaluation import EvalConfig, run_eval
    from tests.play.coding_server import CodeAction

    class OwnCodeAction(Action):
        """
        Represents a single code execution request.
        """

        code: str  # coding_env's own action: its docstring, no field description, no word of Python

    for schema in (OwnCodeAction.model_json_schema(), CodeAction.model_json_schema()):
        reading = compat.read_prompt(_prompt(schema, [observation_to_text({"stdout": "", "stderr": "", "exit_code": 0})]))
        assert reading.reply == compat.PROGRAM and reply_to_action(reading.reply, schema) == {"code": compat.PROGRAM}
    url = play_servers("coding_server.py", "0.4.1")
    config = EvalConfig(base_url=url, per_family=1, max_steps=3)
    oracle, reader = (run_eval(config, _Players(rule)) for rule in (compat.coding_player, compat.prompt_reader))
    # a program that parses is no invalid action; "I do not know" would be a SyntaxError
    assert [(r.steps, r.invalid_actions, r.reward) for r in reader.results] == \
           [(r.steps, r.invalid_actions, r.reward) for r in oracle.results] == [(3, 0, 0.0)] * 2


def test_the_reader_does_what_a_tbench2_task_says_with_the_docs_card_and_the_player_runs_then_evaluates(tmp_path):
    from openenv_prime.client.prompts.prompting import PromptSettings
    from tests.play.bench_envs import TbenchAction

    card = tmp_path / "card.toml"
    card.write_text(_runner().docs_card())  # the card docs/openenv.md gives a new user, as the matrix passes it
    schema = TbenchAction.model_json_schema()
    protocol = EpisodeProtocol(schema, PromptSettings(action_card=str(card)))
    system = protocol.instructions("Solve the task.")
    task = ["Create a file named answer.txt in the task's folder holding the word world: run `echo world > answer.txt`, "
            "then evaluate to run the task's tests.\n\ntask_id: write-world"]
    first = compat.read_prompt(request(task, system))
    assert first.values == ["exec", "evaluate"] and first.pick == "exec"
    assert protocol.action_format.parse(first.reply) == {"action_type": "exec", "command": "echo world > answer.txt",
                                                         "block": True}
    answered = request(task, system)["messages"] + [{"role": "assistant", "content": first.reply},
                                                     {"role": "user", "content": "output: \nsuccess: true"}]
    then = compat.read_prompt({"messages": answered})
    assert then.pick == "evaluate" and json.loads(then.reply)["action_type"] == "evaluate"  # "... ends the episode"
    unquoted = compat.read_prompt(request(["Create the file answer.txt holding the word world."], system))
    assert json.loads(unquoted.reply) == {"action_type": "exec", "command": "ls"}  # no command quoted: the example
    player = request(task, system)
    assert json.loads(compat.tbench2_player(player)) == {"action_type": "exec", "command": "echo world > answer.txt"}
    assert json.loads(compat.tbench2_player({"messages": answered})) == {"action_type": "evaluate"}


def test_the_reader_fills_a_numeric_array_from_the_stated_range_and_the_length_the_environment_says():
    from tests.play.bench_envs import FinrlAction

    schema = FinrlAction.model_json_schema()
    asked = _prompt(schema, [observation_to_text({"state": [1000.0, 10.0, 0.0, 0.5, 50.0], "date": "2024-01-01"})])
    first = compat.read_prompt(asked)
    assert first.values == [-1.0, 1.0] and first.reply == "[1.0]"  # "between -1 and 1": the upper end, one element
    assert reply_to_action(first.reply, schema) == {"actions": [1.0]}
    told = {"messages": asked["messages"] + [
        {"role": "assistant", "content": first.reply},
        {"role": "user", "content": "Action dimension mismatch: expected 2, got 1. Try again."}]}
    assert compat.read_prompt(told).reply == "[1.0, 1.0]"
    assert reply_to_action(compat.finrl_player(asked), schema) == {"actions": [1.0]}
