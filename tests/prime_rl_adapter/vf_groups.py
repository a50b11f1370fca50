"""Real verifiers 0.4.0 objects for the adapter tests: tasks of a taskset with a family field,
and finalized groups (episodes and traces) built the way prime-rl's train sink receives them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import verifiers.v1 as vf


class FamilyTaskData(vf.TaskData):
    """Task data with a family field, as the openenv-prime taskset writes it."""

    family: str
    spec: dict = {}


def family_tasks(families: dict[str, int]) -> list[vf.Task]:
    """`count` tasks per family, in family order, keyed by verifiers' default content hash."""
    tasks = []
    for family, count in families.items():
        for i in range(count):
            data = FamilyTaskData(
                idx=len(tasks), prompt=f"{family}:{i}", family=family, spec={"tier": int(family)}
            )
            tasks.append(vf.Task(data))
    return tasks


def plain_tasks(n: int) -> list[vf.Task]:
    """A taskset with no family field at all (any verifiers taskset)."""
    return [vf.Task(vf.TaskData(idx=i, prompt=f"task {i}")) for i in range(n)]


def trace(
    task: vf.Task,
    reward: float,
    *,
    ok: bool = True,
    trainable: bool = True,
    input_tokens: int = 10,
    output_tokens: int = 5,
    sampled: bool = True,
) -> vf.Trace:
    """A trace as prime-rl's train client builds it: the answer's completion tokens are masked
    (sampled); `sampled=False` leaves no masked token, so prime-rl would not train on it."""
    completion = max(output_tokens, 1) if sampled else 0
    nodes = [
        vf.MessageNode(message=vf.UserMessage(content="question"), token_ids=[7] * 3, mask=[False] * 3),
        vf.MessageNode(
            message=vf.AssistantMessage(content="answer"),
            parent=0,
            sampled=sampled,
            token_ids=[8] * completion,
            mask=[True] * completion,
            logprobs=[0.0] * completion,
        ),
    ]
    return vf.Trace(
        task=vf.TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
        agent=vf.AgentInfo(config=vf.AgentConfig(), trainable=trainable),
        nodes=nodes,
        calls=[vf.ModelCall(node=1, usage=vf.Usage(prompt_tokens=input_tokens, completion_tokens=output_tokens))],
        rewards={"reward": vf.Reward(score=reward)},
        ok=ok,
        errors=[] if ok else [vf.Error(type="RuntimeError", message="rollout failed")],
    )


def group(task: vf.Task, traces: Sequence[vf.Trace]) -> list[vf.Episode]:
    """One episode per trace, sharing a group id, as prime-rl hands `observe` a group."""
    group_id = str(uuid.uuid4())
    return [
        vf.Episode(
            env=vf.EnvInfo(id="openenv-prime", name="chain-sum"),
            task=t.task,
            group=vf.GroupInfo(id=group_id),
            ok=t.ok,
            traces=[t],
        )
        for t in traces
    ]


def scored_group(task: vf.Task, rewards: Sequence[float], **kwargs) -> list[vf.Episode]:
    return group(task, [trace(task, reward, **kwargs) for reward in rewards])


def failed_episode(task: vf.Task) -> vf.Episode:
    """What the dispatcher makes of an exception: an episode with ok=False and no traces."""
    data = task.data
    return vf.Episode(
        env=vf.EnvInfo(id="openenv-prime", name="chain-sum"),
        task=vf.TraceTask(type=type(task).__name__, data=data, key=task.key, hash=task.hash),
        group=vf.GroupInfo(id=str(uuid.uuid4())),
        ok=False,
        errors=[vf.Error(type="TimeoutError", message="env server timed out")],
        traces=[],
    )
