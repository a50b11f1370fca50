"""The legal-move players of scripts/openenv_compat.py, fed the texts the eval shows (rendered by the client from
observations shaped like OpenEnv's maze, grid_world, connect4, chess and reasoning_gym): their moves are legal and
the search players finish. The matrix itself needs an OpenEnv checkout: `scripts/openenv-compat CHECKOUT`."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from openenv_prime.client import observation_to_text

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "openenv_compat.py"
spec = importlib.util.spec_from_file_location("openenv_compat", SCRIPT)
compat = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = compat  # dataclasses look their module up while the script loads
spec.loader.exec_module(compat)

# our own layout (1 = wall), cells as [col, row] like maze_env; the exit is the bottom-right cell
LAYOUT = ["0010000", "0110110", "0000100", "1110101", "0000101", "0111100", "0000010"]
MOVES = {0: (0, -1), 1: (0, 1), 2: (-1, 0), 3: (1, 0)}


def request(texts: list[str]) -> dict:
    return {"messages": [{"role": "user", "content": t} for t in texts]}


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
