"""Test helpers: the toy server in a subprocess, a format-SFT'd tiny model, and a recording sampler."""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

from tests.support.processes import answers
from tests.support.waiting import until

TOY_ENV = Path(__file__).with_name("toy_env.py")
SMALL_VOCAB = "0123456789 :sayrepd"


@contextlib.contextmanager
def toy_server(levels: str = "0", max_sessions: int = 256,
               task_api: bool = True) -> Iterator[tuple[str, subprocess.Popen]]:
    """Serve the toy environment; yields (base URL, process) and always stops it."""
    with tempfile.TemporaryFile() as log:
        flags = [] if task_api else ["--no-task-api"]
        proc = subprocess.Popen([sys.executable, str(TOY_ENV), "--levels", levels, "--max-sessions", str(max_sessions), *flags],
                                stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            line = proc.stdout.readline()  # the server prints its address first
            if not line.startswith("listening on "):
                log.seek(0)
                raise RuntimeError(f"toy server did not start: {line!r} {log.read().decode()[-2000:]}")
            url = line.split()[-1]
            until(lambda: answers(url + "/health"), "the toy server to answer /health", process=proc, interval=0.1)
            yield url, proc
        finally:
            proc.kill()
            proc.wait(timeout=10)


def format_sft_model(base_dir: Path, out_dir: Path, questions: list[str], steps: int = 30, seed: int = 0) -> Path:
    """Supervised steps on prompt -> one random digit -> EOS: the model learns the answer *format*
    (one digit, then stop) without ever seeing a correct answer, so GRPO has signal from step 1."""
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
    prompts = [render_prompt(tok, [{"role": "user", "content": q}]) for q in questions]
    digits = [tok.encode(str(d), add_special_tokens=False)[0] for d in range(10)]
    opt = optim.Adam(learning_rate=3e-3)

    def loss_fn(m, batch):
        logits = m(batch.inputs)
        ce = nn.losses.cross_entropy(logits, batch.targets)
        return (ce * batch.mask).sum() / batch.mask.sum()

    grad = nn.value_and_grad(model, loss_fn)
    for _ in range(steps):
        seqs = [(rng.choice(prompts), [rng.choice(digits), eos]) for _ in range(64)]
        batch = make_batch(seqs, [0.0] * len(seqs))
        _, g = grad(model, batch)
        opt.update(model, g)
        mx.eval(model.parameters(), opt.state)
    out_dir.mkdir(parents=True)
    for f in base_dir.iterdir():
        if f.name != "model.safetensors":
            shutil.copy(f, out_dir / f.name)
    mx.save_safetensors(str(out_dir / "model.safetensors"), dict(tree_flatten(model.parameters())), metadata={"format": "mlx"})
    return out_dir


class RecordingSampler:
    """Wraps a sampler and records every draw and every update, in order."""

    def __init__(self, inner):
        self.inner = inner
        self.draws: list[list[tuple[str, int]]] = []
        self.updates: list[tuple[str, list[float], list[float] | None]] = []
        self.on_sample = None

    def sample(self, n):
        if self.on_sample is not None:
            self.on_sample(len(self.draws) + 1)
        tasks = self.inner.sample(n)
        self.draws.append([(t.split, t.index) for t in tasks])
        return tasks

    def update(self, key, rewards, costs=None):
        """``key``: a key, or the task itself (recorded by its key)."""
        self.updates.append((getattr(key, "key", key), list(rewards), None if costs is None else list(costs)))
        self.inner.update(key, rewards, costs)

    def state_dict(self):
        return self.inner.state_dict()

    def load_state_dict(self, state):
        self.inner.load_state_dict(state)

    def metrics(self, **options):
        return self.inner.metrics(**options)

    def key_metrics(self, keys=None, *, top=None):
        return self.inner.key_metrics(keys, top=top)

    @property
    def pool(self):
        return self.inner.pool


def read_log(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "log.jsonl").read_text().splitlines()]
