"""Sums of two four-digit numbers: a verifiers environment in the `load_environment` style of the verifiers
environments hub (verifiers 0.3: `vf.SingleTurnEnv`, a dataset of question/answer rows, a rubric). Its system prompt
demands a format, as many hub environments' do: the sum inside `<answer>...</answer>` tags, which its parser reads, so
a bare correct sum scores 0.

openenv-prime's tests put it through `openenv import` (openenv 0.10.0) and run the eval, the verifiers taskset
and the MLX trainer on the package that makes; the `answer` column is the gold answer the model must never see.
"""

import random

import verifiers as vf
from datasets import Dataset

SYSTEM_PROMPT = ("Add the two numbers. Think it through if you like, then give the sum inside <answer>...</answer> "
                 "tags; a reply without the tags scores zero.")


def _rows(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        a, b = rng.randint(1000, 9999), rng.randint(1000, 9999)
        rows.append({"question": f"What is {a} + {b}?", "answer": str(a + b), "info": {"digits": 4}})
    return rows


def correct_sum(parser, completion, answer) -> float:
    """1.0 when the reply's last `<answer>` holds the sum."""
    reply = (parser.parse_answer(completion) or "").strip().rstrip(".")
    return 1.0 if reply == answer else 0.0


def load_environment(num_train: int = 24, num_eval: int = 8, seed: int = 0) -> vf.Environment:
    parser = vf.XMLParser(fields=["answer"])
    rubric = vf.Rubric(funcs=[correct_sum], weights=[1.0], parser=parser)
    return vf.SingleTurnEnv(
        dataset=Dataset.from_list(_rows(num_train, seed)),
        eval_dataset=Dataset.from_list(_rows(num_eval, seed + 1)),
        system_prompt=SYSTEM_PROMPT,
        parser=parser,
        rubric=rubric,
    )
