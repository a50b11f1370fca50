"""The TRL callback: in-training evals on an ``EvalSchedule`` through the package's eval harness, logged through
the trainer's logger, and the sampler's state saved in every checkpoint and restored on ``resume_from_checkpoint``.

The sampler's state (with the rows drawn but not yet scored, see :mod:`~openenv_prime.trl.rows`) goes into the
checkpoint's ``trainer_state.json`` under ``stateful_callbacks["OpenEnvPrime"]``, written when the trainer decides to
save, so it travels with the checkpoint wherever it is copied and is read back with the trainer's own state on resume.

On several processes every process runs the callback at the same points: at each checkpoint and each eval the
processes compare a digest of their copies of the sampler and stop together if they differ (:mod:`.replicas`); each
eval is shared, every process playing its share of the tasks with its model (under FSDP or ZeRO-3 in lockstep,
through TRL's own unwrapping for generation) and every process holding the one record, which process 0 logs.
A tool-mode run's eval asks through the tools the trainer declares and plays the calls its model makes
(:mod:`.tool_eval`), as its training does.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from transformers import Trainer, TrainerCallback

from openenv_prime.evaluation.harness import EvalHarness
from openenv_prime.trl.policy import Lockstep, TransformersPolicy
from openenv_prime.trl.replicas import ReplicaMismatch, digest
from openenv_prime.trl.tool_eval import ToolCallAsking

STATE_KEY = "OpenEnvPrime"
"""Where the sampler's state lives in a checkpoint's trainer_state.json (``stateful_callbacks``)."""


class OpenEnvCallback(TrainerCallback):
    """Built by :meth:`OpenEnvTRL.attach`; ``harness`` is None when the run does not evaluate. ``lockstep``: whether
    evals generate in lockstep across processes (None: where the model is sharded, FSDP or ZeRO-3)."""

    def __init__(self, openenv: Any, trainer: Any, harness: EvalHarness | None, *, max_new_tokens: int,
                 lockstep: bool | None = None):
        self.openenv = openenv
        self.trainer = trainer
        self.harness = harness
        self.max_new_tokens = max_new_tokens
        self.lockstep = lockstep

    def on_train_begin(self, args, state, control, model=None, processing_class=None, **kwargs):
        self.openenv.check(args)
        saved = self._agreed_resume(state)
        if saved is not None:
            self.openenv.rows.load_state_dict(saved["rows"])
            if self.harness is not None:
                self.harness.records = list(saved.get("evals", []))
        if self.harness is not None:
            self.harness.schedule = self.harness.schedule.with_last(state.max_steps)
            self._evaluate(state.global_step, processing_class)

    def _agreed_resume(self, state) -> dict[str, Any] | None:
        """The sampler state this run resumes from (None: a new run), once every process is known to have loaded
        the same checkpoint: each process reads its own copy, and a node holding another checkpoint (a stale copy)
        would otherwise surface later as draws that differ, a message pointing at the config instead."""
        saved = (state.stateful_callbacks or {}).get(STATE_KEY)

        def loaded_here() -> tuple[int, str | None]:
            if state.global_step > 0 and saved is None:
                raise ValueError(
                    f"resuming at step {state.global_step}, but the checkpoint's trainer_state.json holds no sampler "
                    f"state (stateful_callbacks[{STATE_KEY!r}]): it was not written by a run with OpenEnvTRL "
                    "attached; start a new run, or resume from a checkpoint of one")
            return state.global_step, digest(saved) if state.global_step > 0 else None

        loaded = self.openenv.rows.replicas.exchange("loading the checkpoint's sampler state", loaded_here)
        if len(set(map(tuple, loaded))) > 1:
            told = "; ".join(f"process {i}: step {step}" + (f" (sampler state {h})" if h else " (no checkpoint)")
                             for i, (step, h) in enumerate(loaded))
            raise ReplicaMismatch(
                f"the training processes resumed different checkpoints ({told}): every process must resume the same "
                "checkpoint, so on several nodes give each node the same checkpoint directory (a shared file system, "
                "or the same copy on every node) and the same resume_from_checkpoint")
        return saved if state.global_step > 0 else None

    def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
        if control.should_save:
            rows = self._same_everywhere(state.global_step)
            state.stateful_callbacks[STATE_KEY] = {"rows": rows,
                                                   "evals": self.harness.records if self.harness is not None else []}
        step_logs = control.should_log
        self._evaluate(state.global_step, processing_class)
        control.should_log = step_logs  # logging the eval cleared it: the step's own log line must still be written

    def on_train_end(self, args, state, control, **kwargs):
        self.openenv.env.close_sessions()

    def _same_everywhere(self, step: int) -> dict[str, Any]:
        """The rows' state, once every process is known to hold the same."""
        with self.openenv.timers.time("rows"):
            return self.openenv.rows.replicas.same(f"the sampler's copies at step {step}", self.openenv.rows.state_dict)

    def _evaluate(self, step: int, tokenizer: Any) -> None:
        timers = self.openenv.timers
        with timers.time("eval_schedule"):
            due = self.harness is not None and self.harness.due(step)
        if not due:
            return
        self._same_everywhere(step)
        replicas = self.openenv.rows.replicas
        self.openenv.env.close_sessions()  # the eval opens its own sessions
        tools, asking = self._tool_calls()
        with timers.time("eval"), self._model_for_generation() as (model, sharded):
            policy = TransformersPolicy(model, tokenizer, max_new_tokens=self.max_new_tokens, tools=tools,
                                        chat_template=getattr(self.trainer, "chat_template", None),
                                        chat_template_kwargs=getattr(self.trainer, "chat_template_kwargs", None))
            lockstep = sharded if self.lockstep is None else self.lockstep
            if lockstep and replicas.count > 1:
                policy = shards = Lockstep(policy, replicas)
            else:
                shards = replicas if replicas.count > 1 else None
            record = self.harness.maybe_run(step, self.openenv.sampler, policy=policy, shards=shards, asking=asking)
        metrics = {f"openenv/eval/{family}/accuracy": acc for family, acc in record["accuracy"].items()}
        metrics["openenv/eval/accuracy"] = record["overall"]
        metrics.update({f"openenv/sampler/{name}": record[name] for name in ("episodes", "cost") if name in record})
        Trainer.log(self.trainer, metrics)  # the base logger: GRPOTrainer.log would fold in and clear its step metrics

    def _tool_calls(self) -> tuple[list | None, ToolCallAsking | None]:
        """In tool mode, the tools the trainer declares and the eval's asking through them (eval = train); else
        none, and the eval asks in text as text mode trains."""
        tools = getattr(self.trainer, "tools", None) if self.openenv.tool_mode else None
        if not tools:
            return None, None
        return tools, ToolCallAsking(tools, self.openenv.config.prompt_budget)

    @contextmanager
    def _model_for_generation(self) -> Iterator[tuple[Any, bool]]:
        """The trainer's model as TRL's own generation takes it (ZeRO-3 parameters gathered, FSDP's root summoned,
        gradient checkpointing off), and whether it is sharded across processes."""
        from trl.distributed import DistributedBackend
        from trl.models import unwrap_model_for_generation

        trainer = self.trainer
        backend = DistributedBackend(trainer.accelerator)
        with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator) as model, \
                backend.summon_full_params(trainer.model_wrapped, recurse=False):
            yield model, backend.is_fsdp or backend.is_zero3
