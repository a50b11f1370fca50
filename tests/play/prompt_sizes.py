"""The turn-1 prompt (system + first user message) of each lookalike environment, in characters, as a markdown table.

    python -m tests.play.prompt_sizes

It builds each environment in-process, resets task 0, puts the observation on the wire the way openenv does
(``model_dump`` without reward and done) and renders it with ``EpisodeProtocol(schema)`` and eval's default system
prompt: the same API before and after the prompt work, so running it with an older ``openenv_prime`` first on
``PYTHONPATH`` gives the "before" column.
"""

from __future__ import annotations

from openenv_prime.client.prompts.render import EpisodeProtocol
from openenv_prime.client.wire.session import StepResult
from openenv_prime.evaluation.config import DEFAULT_SYSTEM_PROMPT
from tests.play.lookalike_envs import ENVIRONMENTS


def turn_one(name: str) -> tuple[str, str]:
    environment, action, _ = ENVIRONMENTS[name]
    observation = environment().reset(index=0)
    wire = observation.model_dump(exclude={"reward", "done"})
    result = StepResult(wire, observation.reward, observation.done, observation.metadata or {})
    protocol = EpisodeProtocol(action.model_json_schema())
    return protocol.instructions(DEFAULT_SYSTEM_PROMPT) or "", protocol.text(result)


def main() -> None:
    print("| environment | system characters | first observation characters | turn-1 prompt characters |")
    print("|---|---:|---:|---:|")
    for name in ENVIRONMENTS:
        system, user = turn_one(name)
        print(f"| {name} | {len(system):,} | {len(user):,} | {len(system) + len(user):,} |")


if __name__ == "__main__":
    main()
