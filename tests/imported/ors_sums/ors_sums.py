"""Sums of two four-digit numbers as an ORS environment (the Open Reward Standard, `ors-sdk` 0.1.0): tasks
by split, a prompt from the task, and one `submit` tool that ends the episode with its reward.

openenv-prime's tests put it through `openenv import` (openenv 0.10.0) and run the eval, the verifiers taskset
and the MLX trainer on the package that makes.
"""

import random

from pydantic import BaseModel

from ors import Environment, Server, Split, TextBlock, ToolOutput, tool

SIZES = {"train": 24, "test": 8}


class SubmitInput(BaseModel):
    answer: str


def _tasks(split: str) -> list[dict]:
    rng = random.Random(f"ors-sums/{split}")
    tasks = []
    for index in range(SIZES[split]):
        a, b = rng.randint(1000, 9999), rng.randint(1000, 9999)
        tasks.append({"id": f"{split}-{index}", "a": a, "b": b})
    return tasks


class SumsEnv(Environment):
    @classmethod
    def list_splits(cls):
        return [Split(name="train", type="train"), Split(name="test", type="test")]

    @classmethod
    def list_tasks(cls, split: str):
        if split not in SIZES:
            raise ValueError(f"unknown split {split!r}; splits: {', '.join(SIZES)}")
        return _tasks(split)

    def get_prompt(self):
        return [TextBlock(text=f"What is {self.task_spec['a']} + {self.task_spec['b']}? Submit the sum.")]

    @tool
    def submit(self, params: SubmitInput) -> ToolOutput:
        """Submit your answer; the episode ends."""
        correct = params.answer.strip() == str(self.task_spec["a"] + self.task_spec["b"])
        return ToolOutput(
            blocks=[TextBlock(text="Correct!" if correct else "Incorrect.")],
            reward=1.0 if correct else 0.0,
            finished=True,
        )


if __name__ == "__main__":
    Server([SumsEnv]).run(port=8080)
