"""One TRL GRPO run of the tiny model through `openenv_prime.trl`, on every process `torchrun` starts (CPU, gloo).

    torchrun --nproc_per_node 2 tests/trl_integration/processes_run.py --url URL --out OUT [--mode tool] [--resume CKPT]

Rewards come from `PositionScore`: they depend only on the task and the completion's position in its group, so runs on
any number of processes see the same rewards and their samplers must draw the same tasks. Each process writes
OUT/process-RANK.json: the groups its sampler was told of (in order), the draws it scored, the state it restored on resume, its final sampler state, its
eval records, the eval lines its trainer logged, and its eval's model calls. tests/trl_integration/test_trl_processes.py reads them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

GROUP = 4


class PositionScore:
    """Reward 1.0 for the first ``task_index % 5`` completions of a group: tasks 0, 5, ... give all-0 groups, 4, 9,
    ... all-1 groups, the others mixed ones. The position is the completion's place in the whole generation batch
    (this process's slice starts at process_index x slice length), so it does not depend on the process count."""

    __name__ = "position"

    def __init__(self, process_index: int):
        self.process_index = process_index
        self.calls = 0
        self.fail_at: int | None = None  # the call that raises (a broken user score)

    def __call__(self, completions, task_index, **kwargs):
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError(f"the user's score broke on process {self.process_index} (scripted)")
        start = self.process_index * len(completions)
        return [float((start + i) % GROUP < task % 5) for i, task in enumerate(task_index)]


COLLECTIVES = ("all_gather_object", "broadcast_object_list", "gather_object", "scatter_object_list", "all_gather",
               "all_gather_into_tensor", "all_reduce", "reduce", "broadcast", "barrier", "reduce_scatter",
               "reduce_scatter_tensor", "all_to_all", "gather", "scatter")


def record_collectives(calls: list[list]) -> None:
    """Wrap torch.distributed's collectives to append [name, thread name, on the main thread, the package's device
    binding on that thread, called from openenv_prime] for every call, from whichever caller (the package, TRL,
    accelerate). The main thread runs ``trainer.train()`` here: it is the trainer's thread."""
    import threading
    import traceback

    import torch.distributed as dist

    from openenv_prime.trl import replicas

    for name in COLLECTIVES:
        original = getattr(dist, name, None)
        if original is None:
            continue

        def wrapped(*args, _name=name, _original=original, **kwargs):
            here = threading.current_thread()
            ours = any("/openenv_prime/" in frame.filename for frame in traceback.extract_stack())
            calls.append([_name, here.name, here is threading.main_thread(),
                          getattr(replicas._bound, "device", None) is not None, ours])
            return _original(*args, **kwargs)

        setattr(dist, name, wrapped)


def fail_on_process_1(what: str, openenv, trainer_args, callback, score) -> None:
    """Break process 1 alone: its environment sessions (a server that is not there), its reward function (the user's
    score raises at its second call) or its share of the evals (another, absent, server)."""
    from openenv_prime.client.wire.session_pool import SessionPool
    from tests.support.processes import free_port

    if trainer_args.process_index != 1:
        return
    absent = f"http://127.0.0.1:{free_port()}"
    if what == "session":
        openenv.env.pool = SessionPool(absent, timeout=5)
    elif what == "score":
        score.fail_at = 2
    elif what == "eval":
        callback.harness.config = callback.harness.config.model_copy(update={"base_url": absent, "timeout": 5})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--mode", choices=["text", "tool"], default="text")
    parser.add_argument("--sampler", default="curriculum")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--per-device", type=int, default=4, help="per_device_train_batch_size (completions)")
    parser.add_argument("--resume", default=None, help="a checkpoint to resume from")
    parser.add_argument("--lockstep", action="store_true", help="evals generate in lockstep, as FSDP/ZeRO-3 need")
    parser.add_argument("--max-sessions", type=int, default=64, help="1: an eval plays one episode at a time")
    parser.add_argument("--diverge", action="store_true", help="process 1 seeds its sampler differently (a broken run)")
    parser.add_argument("--train-split", default="train")
    parser.add_argument("--test-split", default=None)
    parser.add_argument("--resume-on-1", default=None, help="process 1 resumes this checkpoint instead (a stale copy)")
    parser.add_argument("--fail", choices=["session", "score", "eval"], default=None, help="break process 1 alone")
    parser.add_argument("--eval-every", type=int, default=2, help="0: no evals")
    opts = parser.parse_args()
    collectives: list[list] = []
    record_collectives(collectives)

    import torch.distributed as dist
    from trl import GRPOTrainer

    from openenv_prime.evaluation import EvalSchedule
    from openenv_prime.trl import OpenEnvTRL, OpenEnvTRLConfig
    from openenv_prime.trl.policy import TransformersPolicy
    from tests.trl_integration.tiny import grpo_args, tiny_model, tiny_tokenizer

    args = grpo_args(opts.out, max_steps=opts.steps, per_device_train_batch_size=opts.per_device, ddp_timeout=180,
                     max_completion_length=12 if opts.mode == "tool" else 6)
    seed = int(opts.diverge and args.process_index == 1)
    config = OpenEnvTRLConfig(base_url=opts.url, group_size=GROUP, seed=seed, sampler=opts.sampler,
                              train_split=opts.train_split, test_split=opts.test_split, max_steps=2,
                              max_sessions=opts.max_sessions)
    score = PositionScore(args.process_index)
    openenv = OpenEnvTRL(config, tool_mode=opts.mode == "tool", score=score)
    updates: list[list] = []
    update = openenv.sampler.update

    def recording_update(task, rewards, costs=None):
        updates.append([task.index, list(rewards), list(costs) if costs is not None else None])
        return update(task, rewards, costs)

    openenv.sampler.update = recording_update
    generated: list[list[int]] = []  # per eval model call: prompts, model.generate calls
    generate = TransformersPolicy.generate

    def recording_generate(self, prompts, *, batches=None):
        generated.append([len(prompts), max(batches or 0, self.batches(len(prompts)))])
        return generate(self, prompts, batches=batches)

    TransformersPolicy.generate = recording_generate
    dataset = openenv.dataset(args)
    scored: dict[int, int] = {}
    take = openenv.rows.take

    def recording_take(draw):
        row = take(draw)
        scored[draw] = row["task_index"]
        return row

    openenv.rows.take = recording_take
    restored: dict = {}
    load = openenv.rows.load_state_dict

    def recording_load(state):
        load(state)
        restored.update(openenv.rows.state_dict())

    openenv.rows.load_state_dict = recording_load
    tokenizer = tiny_tokenizer()
    if opts.mode == "tool":
        from trl.chat_template_utils import qwen2_5_chat_template

        tokenizer = tiny_tokenizer(qwen2_5_chat_template)
    trainer = GRPOTrainer(model=tiny_model(tokenizer), reward_funcs=[openenv.reward], train_dataset=dataset, args=args,
                          processing_class=tokenizer,
                          **({"environment_factory": openenv.environment_factory()} if opts.mode == "tool" else {}))
    schedule = EvalSchedule(every=opts.eval_every) if opts.eval_every else None
    callback = openenv.attach(trainer, schedule=schedule, per_family=1, max_new_tokens=4,
                              log=opts.out / "evals.jsonl", lockstep=opts.lockstep or None)
    if opts.fail:
        fail_on_process_1(opts.fail, openenv, args, callback, score)
    resume = opts.resume_on_1 if opts.resume_on_1 and args.process_index == 1 else opts.resume
    trainer.train(resume_from_checkpoint=resume)
    openenv.close()
    result = {
        "process": args.process_index, "processes": args.world_size, "steps": trainer.state.global_step,
        "updates": updates, "scored": scored, "state": openenv.rows.state_dict(), "restored": restored,
        "evals": callback.harness.records if callback.harness else [], "groups": openenv.reward.groups,
        "collectives": collectives,
        "logged_evals": [h for h in trainer.state.log_history if "openenv/eval/accuracy" in h],
        "timers": dict(openenv.timers.seconds), "eval_generate": generated,
    }
    (opts.out / f"process-{args.process_index}.json").write_text(json.dumps(result))
    if dist.is_initialized():
        dist.destroy_process_group()  # or the second process aborts at exit ("terminate called without an active exception")


if __name__ == "__main__":
    main()
