"""prime-rl's orchestrator pipeline on CPU with the openenv-prime curriculum (run by patches/orchestrator-smoke).

What runs, unmodified from the patched prime-rl copy: the `rl` config classes (`RLConfig` resolves
configs/prime-rl/chain-sum-curriculum.toml), `TrainEnvs` with its GRPO algorithm, `TrainSource`
(the Curriculum built through the patch, and the env mix), `TrainSink` (process_group: GRPO
advantages, the curriculum's observe, the zero-advantage gate, trace-to-sample compilation, the
staleness sweep, `cancel` for stale groups, batch cutting) and the orchestrator `CheckpointManager`
(torch.save / torch.load of `progress.pt`). Tasks come from the openenv-prime taskset loaded from a
chain_sum server; each rollout is played on that server by a scripted policy that reads the
question and answers right with a probability that falls with the tier, so the server's rewards
vary by tier.

What does not run, and why: prime-rl's `Orchestrator` class itself cannot be imported on a CPU
machine (its module imports the trainer's model code for the tokenizer, which imports
ring_flash_attn and so flash_attn, a CUDA-only build); the dispatcher's inference client, vLLM and
prime-rl's env-server process (the scripted policy plays in their place), and the trainer (batches
are counted, not trained on; the policy version advances one per step as a trainer would ship it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIER_SUCCESS = {0: 0.97, 1: 0.8, 2: 0.5, 3: 0.2, 4: 0.02}


def log(message: str) -> None:
    print(f"[smoke] {message}", flush=True)


def orchestrator_import_blocker() -> str | None:
    try:
        import prime_rl.orchestrator.orchestrator  # noqa: F401
    except Exception as exc:  # report exactly what stops it
        return f"{type(exc).__name__}: {exc}"
    return None


def load_config(path: Path, base_url: str, output_dir: Path, batch_size: int, group_size: int, pending_horizon: int):
    from prime_rl.configs.rl import RLConfig
    from prime_rl.utils.config import cli

    args = [
        "@", str(path),
        "--orchestrator.batch-size", str(batch_size),
        "--orchestrator.group-size", str(group_size),
        "--output-dir", str(output_dir),
    ]
    config = cli(RLConfig, args=args)
    orchestrator = config.orchestrator
    for source in [*orchestrator.train.source, *(orchestrator.eval.source if orchestrator.eval else [])]:
        source.env.taskset = source.env.taskset.model_copy(update={"base_url": base_url})
    for source in orchestrator.train.source:
        sampler = source.curriculum.sampler
        sampler.kwargs = {**sampler.kwargs, "sampler_kwargs": {**sampler.kwargs["sampler_kwargs"], "group_size": group_size},
                          "pending_horizon": pending_horizon}
    return orchestrator


def chain_sum_answer(question: str) -> int:
    from openenv_prime.testing.scripted_openai import chain_sum_terms

    terms = chain_sum_terms(question)
    if not terms:
        raise RuntimeError(f"no chain_sum expression in {question!r}")
    return sum(terms)


async def play(base_url: str, task, rng: random.Random) -> float:
    """One rollout on the chain_sum server: reset to the task, answer, return the server's reward."""
    from openenv_prime.client.wire.session import EpisodeSession

    async with EpisodeSession(base_url) as session:
        first = await session.reset(split=task.data.split, index=task.data.index)
        answer = chain_sum_answer(first.observation["question"])
        right = rng.random() < TIER_SUCCESS[int(task.data.family)]
        last = await session.step({"answer": str(answer if right else answer + 1 + rng.randrange(9))})
    return float(last.reward or 0.0)


def episode(task, env_name: str, group_id: str, reward: float, step: int, version: int):
    """A finalized episode as prime-rl's env server returns it under the train client: the
    completion's tokens sampled (masked), with logprobs."""
    import verifiers.v1 as vf

    completion = [11, 12, 13]
    trace = vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        agent=vf.AgentInfo(config=vf.AgentConfig()),
        nodes=[
            vf.MessageNode(message=vf.UserMessage(content="question"), token_ids=[1, 2, 3, 4], mask=[False] * 4),
            vf.MessageNode(
                message=vf.AssistantMessage(content="answer"), parent=0, sampled=True,
                token_ids=completion, mask=[True] * 3, logprobs=[-0.5] * 3,
            ),
        ],
        calls=[vf.ModelCall(node=1, usage=vf.Usage(prompt_tokens=4, completion_tokens=3))],
        rewards={"openenv_return": vf.Reward(score=reward)},
        ok=True,
    )
    return vf.Episode(
        env=vf.EnvInfo(id="openenv-prime", name=env_name),
        task=trace.task,
        group=vf.GroupInfo(id=group_id),
        run=vf.TrainRunInfo(id="smoke", work=vf.TrainWorkInfo(step=step, policy=vf.PolicySpan(start=version, end=version))),
        traces=[trace],
    )


def verifiers_compat() -> list[str]:
    """prime-rl 559b447 pins verifiers a60a606 (its submodule); PyPI's verifiers 0.4.0 has no
    `Branch.multi_modal_data` etc., which trace_to_samples reads. Missing ones read as None here
    (text-only, no reference model, no MoE routing: what they would be in this run)."""
    from verifiers.v1.trace import Branch

    missing = [name for name in ("multi_modal_data", "reference_logprobs", "routed_experts") if not hasattr(Branch, name)]
    for name in missing:
        setattr(Branch, name, property(lambda self: None))
    return missing


def build_pipeline(config):
    from prime_rl.orchestrator.envs import TrainEnvs
    from prime_rl.orchestrator.train_sink import TrainSink
    from prime_rl.orchestrator.train_source import TrainSource
    from prime_rl.orchestrator.types import Progress
    import verifiers.v1 as vf

    addresses = {("train", source.resolved_name): "tcp://unused" for source in config.train.source}
    train_envs = TrainEnvs(config.train.source, addresses, policy_pool=None, renderer_config=config.renderer)
    for env in train_envs:  # Env.start() without the env-server health wait
        tasks = list(vf.load_taskset(env.config.env.taskset))
        env.tasks, env.num_tasks = iter(tasks), len(tasks)
    train_source = TrainSource(train_envs)
    progress = Progress()
    sink = TrainSink(
        config, tokenizer=None, train_envs=train_envs, mm_token_type_ids_mapping=None, progress=progress,
        batch_size=config.batch_size, token_batch_size=None, on_result=train_source.on_result,
    )
    return train_envs, train_source, sink, progress


def checkpoint_draws(path: Path, env_name: str) -> dict[str, int]:
    """Draws per family recorded in an orchestrator checkpoint (progress.pt, read as prime-rl does)."""
    import torch

    with open(path, "rb") as handle:
        state = torch.load(handle, weights_only=False)
    sampler = state["train_source"]["envs"][env_name]["sampler"]
    return dict(zip(sampler["families"], sampler["family_draws"]))


def shares(draws: dict[str, int]) -> dict[str, float]:
    total = sum(draws.values())
    return {family: round(draws.get(family, 0) / total, 3) for family in sorted(TIER_SUCCESS_KEYS)} if total else {}


TIER_SUCCESS_KEYS = [str(tier) for tier in TIER_SUCCESS]
SIGNAL_TIERS = ("1", "2", "3")  # 1 - p^8 - (1-p)^8 >= 0.8 for these tiers' success rates


async def run(args) -> tuple[dict, list[str]]:
    from prime_rl.orchestrator.ckpt import CheckpointManager
    from prime_rl.orchestrator.types import GroupCancellation

    shimmed = verifiers_compat()
    if shimmed:
        log(f"verifiers 0.4.0 lacks Branch.{', Branch.'.join(shimmed)} (prime-rl's pinned verifiers has them): read as None")
    blocker = orchestrator_import_blocker()
    log(f"prime_rl.orchestrator.orchestrator import: {'ok' if blocker is None else 'blocked: ' + blocker}")
    output_dir = Path(args.output_dir)
    config = load_config(Path(args.config), args.base_url, output_dir, args.batch_size, args.group_size, args.pending_horizon)
    train_envs, train_source, sink, progress = build_pipeline(config)
    env_name = next(iter(train_envs)).name
    curriculum = train_source.curricula[env_name]
    adapter = curriculum.sampler
    log(f"source {env_name!r}: {len(adapter.tasks)} tasks, sampler {type(adapter).__name__}, gates {sorted(curriculum.gates)}")

    # Instrumentation only (no behaviour change): at each gate decision, had the sampler already
    # observed this group? And how many groups did the gate reject?
    delivered = {"groups": 0, "observed_before_gate": 0, "rejected": 0}
    gate = curriculum.gates["zero_advantage"]
    admit = gate.admit

    def recording_admit(group):
        delivered["observed_before_gate"] += adapter.counts["observed_groups"] == delivered["groups"]
        verdict = admit(group)
        delivered["rejected"] += not verdict
        return verdict

    gate.admit = recording_admit
    ckpt = CheckpointManager(output_dir, config.ckpt)
    rng = random.Random(args.seed)
    cancelled = 0
    cancelled_at: list[tuple[float, str]] = []  # (draw number, task key) of each cancelled group
    drawn_keys: list[str] = []  # the task key of every draw, in order
    most_pending = 0
    unaccounted = []  # steps where drawn != observed + pending + lost
    saved_steps = []
    progress.step = 1
    while progress.step <= args.steps:
        step = progress.step
        draws: Counter = Counter()
        batch = None
        while batch is None:
            task = train_source.next_task(step=step).task
            draws[task.data.family] += 1
            drawn_keys.append(task.key)
            group_id = uuid.uuid4().hex
            if rng.random() < args.stale_share:  # the dispatcher cancels it as stale: never observed
                cancelled += 1
                cancelled_at.append((adapter.counts["sampled"], task.key))  # its draw number
                batch = await sink.cancel(GroupCancellation(
                    kind="train", env_name=env_name, group_id=group_id, count=config.group_size, reason="stale"))
                continue
            rewards = await asyncio.gather(*(play(args.base_url, task, rng) for _ in range(config.group_size)))
            delivered["groups"] += 1
            for reward in rewards:
                batch = await sink.add(episode(task, env_name, group_id, reward, step, max(step - 1, 0))) or batch
        metrics = train_source.metrics()  # what the orchestrator logs once per step
        pending, lost = adapter.metrics()["adapter/pending_groups"], adapter.metrics()["adapter/lost_groups"]
        most_pending = max(most_pending, pending)
        if adapter.counts["sampled"] != adapter.counts["observed_groups"] + pending + lost:
            unaccounted.append(step)
        log(
            f"step {step}: batch shipped ({len(sink.pending_batch)} traces left queued); groups drawn {sum(draws.values())}; "
            f"admission_rate {metrics.get(f'curriculum/{env_name}/admission_rate', 0):.2f}; "
            f"pending {metrics[f'curriculum/{env_name}/sampler/adapter/pending_groups']:.0f}, lost {lost:.0f}; "
            f"draws by tier {dict(sorted(draws.items()))}"
        )
        if step % args.ckpt_every == 0:
            ckpt.save(progress, train_source, step)
            saved_steps.append(step)
        progress.step += 1

    env = env_name
    paths = {step: ckpt.get_ckpt_path(step) / "progress.pt" for step in saved_steps}
    first = checkpoint_draws(paths[saved_steps[0]], env)
    final = checkpoint_draws(paths[saved_steps[-1]], env)
    previous = checkpoint_draws(paths[saved_steps[-2]], env) if len(saved_steps) > 1 else {}
    late = {family: final.get(family, 0) - previous.get(family, 0) for family in final}
    summary = {
        "orchestrator_import": blocker or "ok",
        "steps": args.steps,
        "groups_drawn": int(adapter.counts["sampled"]),
        "groups_delivered_to_on_result": delivered["groups"],
        "groups_cancelled_stale": cancelled,
        "observed_groups": int(adapter.counts["observed_groups"]),
        "observed_before_gate": delivered["observed_before_gate"],
        "gate_rejected": delivered["rejected"],
        "pending_horizon": args.pending_horizon,
        "pending_groups_max": most_pending,
        "pending_groups_at_end": adapter.metrics()["adapter/pending_groups"],
        "lost_groups_at_end": adapter.metrics()["adapter/lost_groups"],
        f"draw_share_steps_1_{saved_steps[0]}": shares(first),
        f"draw_share_steps_{saved_steps[-2] + 1 if len(saved_steps) > 1 else 1}_{saved_steps[-1]}": shares(late),
        "checkpoint_steps": saved_steps,
        "tier_success": {str(tier): rate for tier, rate in TIER_SUCCESS.items()},
        "signal_tiers": list(SIGNAL_TIERS),
    }
    early_signal = sum(shares(first).get(t, 0) for t in SIGNAL_TIERS)
    late_signal = sum(shares(late).get(t, 0) for t in SIGNAL_TIERS)
    summary["signal_tier_share_first_vs_last"] = [round(early_signal, 3), round(late_signal, 3)]

    # Resume: a fresh pipeline loads the last checkpoint through prime-rl's CheckpointManager and
    # must draw exactly what the original draws from that point.
    _, resumed_source, _, resumed_progress = build_pipeline(config)
    ckpt.load(resumed_progress, resumed_source, step=saved_steps[-1])
    resumed = resumed_source.curricula[env].sampler
    if saved_steps[-1] == args.steps:
        original_next = [train_source.next_task(step=args.steps + 1).task.key for _ in range(20)]
        resumed_next = [resumed_source.next_task(step=args.steps + 1).task.key for _ in range(20)]
        summary["resume_continues_identically"] = original_next == resumed_next
    summary["resumed_observed_groups"] = int(resumed.counts["observed_groups"])

    failures = []
    if summary["groups_drawn"] == 0:
        failures.append("the curriculum drew no tasks")
    if summary["observed_groups"] != delivered["groups"] or delivered["observed_before_gate"] != delivered["groups"]:
        failures.append("not every delivered group was observed before the zero-advantage gate")
    if delivered["rejected"] == 0:
        failures.append("the zero-advantage gate rejected nothing (no all-equal groups seen)")
    if summary["pending_groups_at_end"] > cancelled + 1:
        failures.append("stale groups stayed pending")
    if most_pending > args.pending_horizon:
        failures.append(f"pending groups reached {most_pending:.0f}, above the horizon of {args.pending_horizon} draws")
    if unaccounted:
        failures.append(f"drawn != observed + pending + lost at steps {unaccounted}")
    # Delivered groups are observed at once, so the cancelled groups drawn a horizon ago are lost. prime-rl's observe
    # names the task, not the draw: when a task is drawn again while a cancelled draw of it is outstanding, the
    # adapter settles the older draw and keeps the newer one pending, so that loss shows later (never earlier).
    cutoff = summary["groups_drawn"] - args.pending_horizon  # at the end of the run, before the resume check's draws
    expired = sum(1 for number, _ in cancelled_at if number <= cutoff)
    redrawn = sum(1 for number, key in cancelled_at if number <= cutoff and key in drawn_keys[int(number):])
    if not expired - redrawn <= summary["lost_groups_at_end"] <= expired:
        failures.append(f"{summary['lost_groups_at_end']:.0f} groups counted lost, but {expired} cancelled groups are past "
                        f"the horizon ({redrawn} of them of a task drawn again, whose loss may show later)")
    if late_signal <= early_signal:
        failures.append(f"draws did not move toward the tiers with signal ({early_signal:.3f} -> {late_signal:.3f})")
    if not summary.get("resume_continues_identically", False):
        failures.append("the resumed pipeline does not continue the original draws")
    if summary["resumed_observed_groups"] != summary["observed_groups"]:
        failures.append("the checkpoint did not carry the sampler's counters")
    return summary, failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs/prime-rl/chain-sum-curriculum.toml"))
    parser.add_argument("--base-url", required=True, help="the chain_sum server")
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64, help="rollouts per step (orchestrator.batch_size)")
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--stale-share", type=float, default=0.1, help="share of groups cancelled as stale")
    parser.add_argument("--pending-horizon", type=int, default=32,
                        help="the adapter's pending_horizon (draws), small here so cancelled groups expire within the run")
    parser.add_argument("--ckpt-every", type=int, default=4)
    parser.add_argument("--window", type=int, default=3, help="steps compared at the start and the end")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--summary-out", type=Path, help="also write the summary here, as JSON (patches/smoke_table.py "
                        "compares it with docs/prime-rl.md)")
    args = parser.parse_args()
    if args.steps < 2 * args.ckpt_every or args.steps % args.ckpt_every:
        parser.error("--steps must be a multiple of --ckpt-every, at least two checkpoints (to compare draws and resume)")
    summary, failures = asyncio.run(run(args))
    print(json.dumps(summary, indent=1), flush=True)
    if args.summary_out is not None:
        args.summary_out.write_text(json.dumps(summary, indent=1))
    for failure in failures:
        log(f"FAILED: {failure}")
    log("OK" if not failures else f"{len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
