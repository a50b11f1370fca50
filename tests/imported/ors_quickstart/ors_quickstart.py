"""The ORS quick start's `MathEnv` (ors-sdk 0.1.0's README), as a user copies it: one `test` split whose task specs
hold the question and its gold `answer`, a prompt made of the question alone, and a `submit` tool without a docstring
(so without a description). Only the questions differ: eight sums of two four-digit numbers instead of "What is 2+2?",
so that a prompt holding the answer can be told from one holding the question.

openenv-prime's tests put it through `openenv import` (openenv 0.10.0) and run the eval, the verifiers taskset and
the MLX trainer on the package that makes.
"""

import random

from pydantic import BaseModel

from ors import Environment, Server, Split, TextBlock, ToolOutput, tool


class SubmitInput(BaseModel):
    answer: str


def _questions() -> list[dict]:
    rng = random.Random("ors-quickstart")
    pairs = [(rng.randint(1000, 9999), rng.randint(1000, 9999)) for _ in range(8)]
    return [{"question": f"What is {a}+{b}?", "answer": str(a + b)} for a, b in pairs]


class MathEnv(Environment):
    @classmethod
    def list_splits(cls):
        return [Split(name="test", type="test")]

    @classmethod
    def list_tasks(cls, split: str):
        return _questions()

    def get_prompt(self):
        return [TextBlock(text=self.task_spec["question"])]

    @tool
    def submit(self, params: SubmitInput) -> ToolOutput:
        correct = params.answer.strip() == self.task_spec["answer"]
        return ToolOutput(
            blocks=[TextBlock(text="Correct!" if correct else "Incorrect")],
            reward=1.0 if correct else 0.0,
            finished=True,
        )


if __name__ == "__main__":
    Server([MathEnv]).run(port=8080)
