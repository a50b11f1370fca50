"""Four environments shaped like OpenEnv environments we did not write (wildfire, snake, openspiel, textarena), written
here from their published shapes (none of their code): what matters for prompts is the same.

- `fire` (wildfire): action `{"action": str, "x": Optional[int], "y": Optional[int]}` whose legal values sit only in the
  class docstring (`"break"`, `"water"`, `"wait"`); observation a flat 32x32 int grid with `width`/`height` fields,
  wind, humidity and counters. Water on a burning cell puts it out (+1); a move without a target costs 0.05.
- `snake` (snake): action `{"action": int}` described only in the docstring, twice (relative and absolute steering);
  observation a 20x20 int grid (0 empty, 1 fruit, 2 wall, 3 tail, 4 body, 5 head), a 20x20x8 float tensor and
  counters. Every step pays 0.01; the episode ends after 6 steps.
- `catch` (openspiel's catch): action `{"action_id": int, "game_name": str = "catch", "game_params": dict = {}}`;
  observation a flat 50-float `info_state` (10 rows x 5 columns, 1.0 at the ball and the paddle, no shape fields),
  `legal_actions` [0, 1, 2] (left, stay, right), `game_phase`, `current_player_id`, `opponent_last_action`. The ball
  falls a row a step; after 9 steps +1 when the paddle is under it, else -1.
- `guess` (textarena's GuessTheNumber): action `{"message": str}`; observation `prompt`, the raw `messages` (whose
  first one repeats the prompt), `current_player_id`, `legal_players`, `info`, and `metadata` with the messages
  again; after the first step `prompt` is only the game's id. A guess is a number in square brackets; the hit pays 1.

Each has a Task API (split `test`, four tasks `{"id", "level", "seed"}`) and plays a task from its seed alone. Run as
`PYTHONPATH=. python tests/play/lookalike_envs.py PORT MAX_SESSIONS {fire|snake|catch|guess}` (openenv 0.4.1 or 0.10.0).
"""

from __future__ import annotations

import random
import re
import sys
from typing import Any, Dict, List, Optional

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, Field

from tests.support.static_tasks import static_tasks

TASKS = [{"id": f"task-{i}", "level": i % 2, "seed": 11 * i + 3} for i in range(4)]


class _Tasks(static_tasks(TASKS), Environment):
    """The Task API hooks and per-seed resets every lookalike shares."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()
        self._rng = random.Random(0)

    def _begin(self, index: int, episode_id: Optional[str]) -> None:
        self._rng = random.Random(TASKS[index]["seed"])
        self._state = State(episode_id=episode_id, step_count=0)

    @property
    def state(self) -> State:
        return self._state


# ---- fire (wildfire) ------------------------------------------------------------------------------------------
class FireAction(Action):
    """What the crew does this step.

    action: "break" (cut a firebreak), "water" (drop water), "wait"
    x, y: the target cell, needed for break and water
    """

    action: str
    x: Optional[int] = None
    y: Optional[int] = None


class FireObservation(Observation):
    """What the crew sees."""

    grid: List[int]  # height*width cells, row by row: 0 ash, 1 fuel, 2 burning, 3 firebreak, 4 wet
    width: int
    height: int
    step: int
    wind_dir: str
    humidity: float
    burning_count: int
    burned_count: int
    reward_hint: float = 0.0
    remaining_water: int = 0
    remaining_breaks: int = 0


class FireEnvironment(_Tasks):
    SIZE = 32

    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._begin(index, episode_id)
        self._grid = [1] * (self.SIZE * self.SIZE)
        for _ in range(2):
            self._grid[self._rng.randrange(self.SIZE * self.SIZE)] = 2
        self._water, self._wind = 8, self._rng.choice(["N", "NE", "E", "SE", "S", "SW", "W", "NW", "CALM"])
        return self._observe(0.0, None)

    def step(self, action: FireAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        reward = -0.05
        if action.action == "wait":
            reward = 0.0
        elif action.action in ("water", "break") and action.x is not None and action.y is not None:
            cell = action.y * self.SIZE + action.x
            if 0 <= action.x < self.SIZE and 0 <= action.y < self.SIZE:
                reward = 1.0 if self._grid[cell] == 2 and action.action == "water" else 0.0
                self._grid[cell] = 4 if action.action == "water" else 3
                self._water -= action.action == "water"
        done = 2 not in self._grid or self._state.step_count >= 8
        return self._observe(reward, done)

    def _observe(self, reward: float, done: Optional[bool]) -> FireObservation:
        return FireObservation(
            grid=list(self._grid), width=self.SIZE, height=self.SIZE, step=self._state.step_count, wind_dir=self._wind,
            humidity=0.25, burning_count=self._grid.count(2), burned_count=self._grid.count(0),
            remaining_water=self._water, remaining_breaks=50, done=bool(done), reward=reward,
        )


# ---- snake ----------------------------------------------------------------------------------------------------
class SnakeAction(Action):
    """Where the snake goes next.

    With relative steering (observer 'snake'):
        action: int in [0, 1, 2]
            0 = keep going (straight on)
            1 = turn left (a quarter turn)
            2 = turn right (a quarter turn)

    With absolute steering (observer 'human'):
        action: int in [0, 1, 2, 3, 4]
            0 = keep going
            1 = left
            2 = right
            3 = down
            4 = up
    """

    action: int


class SnakeObservation(Observation):
    """The board and the snake's tallies."""

    grid: List[List[int]]
    observation: List[List[List[float]]]  # rows x columns x 8 one-hot channels
    episode_score: float = 0.0
    episode_steps: int = 0
    episode_fruits: int = 0
    episode_kills: int = 0
    alive: bool = True


class SnakeEnvironment(_Tasks):
    SIZE = 20

    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._begin(index, episode_id)
        self._row, self._fruit = 10, (self._rng.randrange(2, 18), self._rng.randrange(2, 18))
        return self._observe(0.0, False)

    def step(self, action: SnakeAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        return self._observe(0.01, self._state.step_count >= 6)

    def _observe(self, reward: float, done: bool) -> SnakeObservation:
        grid = [[2 if r in (0, self.SIZE - 1) or c in (0, self.SIZE - 1) else 0 for c in range(self.SIZE)]
                for r in range(self.SIZE)]
        grid[self._fruit[0]][self._fruit[1]] = 1
        grid[self._row][8], grid[self._row][9], grid[self._row][10] = 3, 4, 5
        tensor = [[[1.0 if channel == cell else 0.0 for channel in range(8)] for cell in row] for row in grid]
        return SnakeObservation(grid=grid, observation=tensor, episode_steps=self._state.step_count,
                                episode_score=round(0.01 * self._state.step_count, 2), done=done, reward=reward)


# ---- catch (openspiel) ----------------------------------------------------------------------------------------
class CatchAction(Action):
    """An action in a board game.

    Attributes:
        action_id: Which action to play (one of the observation's legal_actions).
        game_name: The game to play (e.g., "catch", "tic_tac_toe").
        game_params: Settings of the game (e.g., {"rows": 10}).
    """

    action_id: int
    game_name: str = "catch"
    game_params: Dict[str, Any] = Field(default_factory=dict)


class CatchObservation(Observation):
    """What the player may know.

    Attributes:
        info_state: The player's information state as a flat tensor.
        legal_actions: The actions the player may take now.
    """

    info_state: List[float]
    legal_actions: List[int]
    game_phase: str = "playing"
    current_player_id: int = 0
    opponent_last_action: Optional[int] = None


class CatchEnvironment(_Tasks):
    ROWS, COLS = 10, 5

    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._begin(index, episode_id)
        self._ball, self._row, self._paddle = self._rng.randrange(self.COLS), 0, self.COLS // 2
        return self._observe(False, None)

    def step(self, action: CatchAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        self._paddle = min(max(self._paddle + action.action_id - 1, 0), self.COLS - 1)
        self._row += 1
        if self._row == self.ROWS - 1:
            return self._observe(True, 1.0 if self._paddle == self._ball else -1.0)
        return self._observe(False, 0.0)

    def _observe(self, done: bool, reward: Optional[float]) -> CatchObservation:
        state = [0.0] * (self.ROWS * self.COLS)
        state[self._row * self.COLS + self._ball] = 1.0
        state[(self.ROWS - 1) * self.COLS + self._paddle] = 1.0
        return CatchObservation(info_state=state, legal_actions=[] if done else [0, 1, 2],
                                game_phase="terminal" if done else "playing", done=done, reward=reward)


# ---- guess (textarena) ----------------------------------------------------------------------------------------
class GuessMessage(BaseModel):
    sender_id: int
    content: str
    category: str


class GuessAction(Action):
    """The player's message to the game."""

    message: str


class GuessObservation(Observation):
    """What the game says."""

    prompt: str
    messages: List[GuessMessage] = Field(default_factory=list)
    current_player_id: int = 0
    legal_players: List[int] = Field(default_factory=list)
    info: Dict[str, Any] = Field(default_factory=dict)


GUESS_ID = "GuessNumber-v0"
GUESS_RULES = (
    "[GAME] You are Player 0 in Guess The Number.\nThe number is between 1 and 20.\nAfter each guess the game says "
    "whether the number is higher or lower.\nOnly a number in square brackets counts as a guess, e.g. [5].\n"
    "Enter your guess."
)
_BRACKETED = re.compile(r"\[(\d+)\]")


class GuessEnvironment(_Tasks):
    def reset(self, split: str = "test", index: int = 0, episode_id: Optional[str] = None, **kwargs: Any):
        self._begin(index, episode_id)
        self._number = self._rng.randint(1, 20)
        return self._observe(GUESS_RULES, [GuessMessage(sender_id=-1, content=GUESS_RULES, category="PROMPT")], False, 0.0)

    def step(self, action: GuessAction, timeout_s: Optional[float] = None, **kwargs: Any):
        self._state.step_count += 1
        said = [GuessMessage(sender_id=0, content=action.message, category="PLAYER_ACTION")]
        match = _BRACKETED.search(action.message)
        if match is None:
            verdict, done, reward = "That is no guess: write a number in square brackets.", False, 0.0
        else:
            guess = int(match.group(1))
            done, reward = guess == self._number, 1.0 if guess == self._number else 0.0
            verdict = "You found it!" if done else f"Your guess of {guess} is {'lower' if guess < self._number else 'higher'} than the number."
        done = done or self._state.step_count >= 8
        return self._observe(GUESS_ID, said + [GuessMessage(sender_id=-1, content=verdict, category="GAME")], done, reward)

    def _observe(self, prompt: str, messages: list[GuessMessage], done: bool, reward: float) -> GuessObservation:
        raw = [message.model_dump() for message in messages]
        return GuessObservation(prompt=prompt, messages=messages, legal_players=[0], done=done, reward=reward,
                                metadata={"env_id": GUESS_ID, "turn": self._state.step_count, "raw_messages": raw})


ENVIRONMENTS = {
    "fire": (FireEnvironment, FireAction, FireObservation),
    "snake": (SnakeEnvironment, SnakeAction, SnakeObservation),
    "catch": (CatchEnvironment, CatchAction, CatchObservation),
    "guess": (GuessEnvironment, GuessAction, GuessObservation),
}


if __name__ == "__main__":
    import uvicorn

    port, max_sessions, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    environment, action, observation = ENVIRONMENTS[name]
    app = create_app(environment, action, observation, env_name=name, max_concurrent_envs=max_sessions)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
