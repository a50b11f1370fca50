"""The TRL callback: in-training evals on an ``EvalSchedule`` through the package's eval harness, logged through
the trainer's logger, and the sampler's state saved in every checkpoint and restored on ``resume_from_checkpoint``.

The sampler's state (with the rows drawn but not yet scored, see :mod:`~openenv_prime.trl.rows`) goes into the
checkpoint's ``trainer_state.json`` under ``stateful_callbacks["OpenEnvPrime"]``, written when the trainer decides to
save, so it travels with the checkpoint wherever it is copied and is read back with the trainer's own state on resume.
"""

from __future__ import annotations

from typing import Any

from transformers import Trainer, TrainerCallback

from openenv_prime.evaluation.harness import EvalHarness
from openenv_prime.trl.policy import TransformersPolicy

STATE_KEY = "OpenEnvPrime"
"""Where the sampler's state lives in a checkpoint's trainer_state.json (``stateful_callbacks``)."""


class OpenEnvCallback(TrainerCallback):
    """Built by :meth:`OpenEnvTRL.attach`; ``harness`` is None when the run does not evaluate."""

    def __init__(self, openenv: Any, trainer: Any, harness: EvalHarness | None, *, max_new_tokens: int):
        self.openenv = openenv
        self.trainer = trainer
        self.harness = harness
        self.max_new_tokens = max_new_tokens

    def on_train_begin(self, args, state, control, model=None, processing_class=None, **kwargs):
        self.openenv.check(args)
        saved = (state.stateful_callbacks or {}).get(STATE_KEY)
        if state.global_step > 0:
            if saved is None:
                raise ValueError(
                    f"resuming at step {state.global_step}, but the checkpoint's trainer_state.json holds no sampler "
                    f"state (stateful_callbacks[{STATE_KEY!r}]): it was not written by a run with OpenEnvTRL attached; "
                    "start a new run, or resume from a checkpoint of one"
                )
            self.openenv.rows.load_state_dict(saved["rows"])
            if self.harness is not None:
                self.harness.records = list(saved.get("evals", []))
        if self.harness is not None:
            self.harness.schedule = self.harness.schedule.with_last(state.max_steps)
            self._evaluate(state.global_step, model, processing_class)

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        if control.should_save:
            state.stateful_callbacks[STATE_KEY] = {"rows": self.openenv.rows.state_dict(),
                                                   "evals": self.harness.records if self.harness is not None else []}
        step_logs = control.should_log
        self._evaluate(state.global_step, model, processing_class)
        control.should_log = step_logs  # logging the eval cleared it: the step's own log line must still be written

    def on_train_end(self, args, state, control, **kwargs):
        self.openenv.env.sockets.run(self.openenv.env.pool.close())

    def _evaluate(self, step: int, model: Any, tokenizer: Any) -> None:
        timers = self.openenv.timers
        with timers.time("eval_schedule"):
            due = self.harness is not None and self.harness.due(step)
        if not due:
            return
        policy = TransformersPolicy(model, tokenizer, max_new_tokens=self.max_new_tokens)
        self.openenv.env.sockets.run(self.openenv.env.pool.close())  # the eval opens its own sessions
        with timers.time("eval"):
            record = self.harness.maybe_run(step, self.openenv.sampler, policy=policy)
        metrics = {f"openenv/eval/{family}/accuracy": acc for family, acc in record["accuracy"].items()}
        metrics["openenv/eval/accuracy"] = record["overall"]
        metrics.update({f"openenv/sampler/{name}": record[name] for name in ("episodes", "cost") if name in record})
        Trainer.log(self.trainer, metrics)  # the base logger: GRPOTrainer.log would fold in and clear its step metrics
