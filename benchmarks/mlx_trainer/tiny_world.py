"""The tiny model's world for `benchmarks.mlx_trainer.speed --model tiny`: a game a random tiny model learns in
seconds, its server, and the format warm start that gives its groups signal from step 1, so the training phase of
a step is really exercised.

The game is "say 7:" -> "7" (reward 1.0 for exactly "7", else 0.0; one step), family field `level`, the level 0 of
the tests' toy environment (`tests/mlx_trainer/toy_env.py`). It is written again here because no file outside
`tests/` imports from `tests/`; it is served the way a user's environment is, by `openenv-prime serve MODULE:CLASS`
with a task list (docs/openenv.md, bring your own environment). Annotations stay real classes (no
``from __future__ import annotations``): the server reads the action and observation classes from `step`'s.
"""

import contextlib
import json
import random
import shutil
from pathlib import Path
from typing import Any, Iterator, Optional

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

QUESTION, ANSWER = "say 7:", "7"
VOCAB = "0123456789 :sayrepd"  # the tiny model's characters: enough for the question and every digit
TRAIN_TASKS = 20


class SayAction(Action):
    answer: str = Field(max_length=3, description="the reply")


class SayObservation(Observation):
    question: str = ""


class SaySeven(Environment):
    """One step: the reply is right when it is exactly "7"."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()

    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None, **kwargs: Any) -> SayObservation:
        self._state = State(episode_id=episode_id, step_count=0)
        return SayObservation(question=QUESTION, done=False, reward=None)

    def step(self, action: SayAction, timeout_s: Optional[float] = None, **kwargs: Any) -> SayObservation:
        self._state.step_count += 1
        return SayObservation(question=QUESTION, done=True, reward=1.0 if action.answer == ANSWER else 0.0)

    @property
    def state(self) -> State:
        return self._state


@contextlib.contextmanager
def tiny_world_server(folder: Path, max_sessions: int = 256) -> Iterator[str]:
    """Serve `SaySeven` with `TRAIN_TASKS` train tasks of level 0; yields the base URL."""
    from openenv_prime.envs.launch import local_server

    tasks = folder / "say-seven.jsonl"
    tasks.write_text("".join(json.dumps({"split": "train", "id": f"say/{i}", "level": 0, "reset": {"seed": i}}) + "\n"
                             for i in range(TRAIN_TASKS)))
    with local_server(f"{__name__}:SaySeven", tasks=tasks, max_sessions=max_sessions,
                      paths=[Path(__file__).resolve().parents[2]]) as url:
        yield url


def format_warm_start(base_dir: Path, out_dir: Path, steps: int = 30, seed: int = 0) -> Path:
    """Supervised steps on the question -> one random digit -> EOS: the model learns the answer's format (one digit,
    then stop) without ever seeing the right answer, so about one reply in ten is right and groups differ."""
    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim
    from mlx.utils import tree_flatten
    from mlx_lm import load

    from openenv_prime.mlx_trainer.rollouts.generation import render_prompt
    from openenv_prime.mlx_trainer.training.grpo import make_batch

    rng = random.Random(seed)
    mx.random.seed(seed)
    model, tok = load(str(base_dir))
    eos = sorted(tok.eos_token_ids)[0]
    prompt = render_prompt(tok, [{"role": "user", "content": QUESTION}])
    digits = [tok.encode(str(d), add_special_tokens=False)[0] for d in range(10)]
    opt = optim.Adam(learning_rate=3e-3)

    def loss_fn(m, batch):
        ce = nn.losses.cross_entropy(m(batch.inputs), batch.targets)
        return (ce * batch.mask).sum() / batch.mask.sum()

    grad = nn.value_and_grad(model, loss_fn)
    for _ in range(steps):
        seqs = [(prompt, [rng.choice(digits), eos]) for _ in range(64)]
        _, g = grad(model, make_batch(seqs, [0.0] * len(seqs)))
        opt.update(model, g)
        mx.eval(model.parameters(), opt.state)
    out_dir.mkdir(parents=True)
    for f in base_dir.iterdir():
        if f.name != "model.safetensors":
            shutil.copy(f, out_dir / f.name)
    mx.save_safetensors(str(out_dir / "model.safetensors"), dict(tree_flatten(model.parameters())), metadata={"format": "mlx"})
    return out_dir
