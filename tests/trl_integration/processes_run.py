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

    def __call__(self, completions, task_index, **kwargs):
        start = self.process_index * len(completions)
        return [float((start + i) % GROUP < task % 5) for i, task in enumerate(task_index)]


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
    opts = parser.parse_args()

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
    openenv = OpenEnvTRL(config, tool_mode=opts.mode == "tool", score=PositionScore(args.process_index))
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
    callback = openenv.attach(trainer, schedule=EvalSchedule(every=2), per_family=1, max_new_tokens=4,
                              log=opts.out / "evals.jsonl", lockstep=opts.lockstep or None)
    trainer.train(resume_from_checkpoint=opts.resume)
    openenv.close()
    result = {
        "process": args.process_index, "processes": args.world_size, "steps": trainer.state.global_step,
        "updates": updates, "scored": scored, "state": openenv.rows.state_dict(), "restored": restored,
        "evals": callback.harness.records, "groups": openenv.reward.groups,
        "logged_evals": [h for h in trainer.state.log_history if "openenv/eval/accuracy" in h],
        "timers": dict(openenv.timers.seconds), "eval_generate": generated,
    }
    (opts.out / f"process-{args.process_index}.json").write_text(json.dumps(result))
    if dist.is_initialized():
        dist.destroy_process_group()  # or the second process aborts at exit ("terminate called without an active exception")


if __name__ == "__main__":
    main()
