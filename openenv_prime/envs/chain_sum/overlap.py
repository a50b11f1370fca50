"""Which test items also occur in train, per tier.

The splits use disjoint seed ranges, but a tier with few distinct problems repeats them anyway:
tier 0 (two 1-digit terms, + or -) has only 200 distinct questions, so every test item there also
appears in train. Run ``python -m openenv_prime.envs.chain_sum.overlap [--tiers N] [--schedule S]``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from openenv_prime.envs.chain_sum.taskset import ChainSumTaskset


@dataclass(frozen=True)
class TierOverlap:
    tier: int
    num_terms: int
    num_digits: int
    test_items: int
    distinct_test_questions: int
    distinct_train_questions: int
    test_items_in_train: int


def _questions(taskset: ChainSumTaskset, split: str, tier: int) -> list[str]:
    per_tier = taskset.per_tier[split]
    return [taskset.entry(split, tier * per_tier + i)["question"] for i in range(per_tier)]


def overlap_report(taskset: ChainSumTaskset) -> list[TierOverlap]:
    """Per tier: how many test items have a question that some train item of the same tier has.

    Tiers differ in problem shape, so an item can only repeat within its own tier."""
    report = []
    for shape in taskset.tiers:
        test = _questions(taskset, "test", shape.tier)
        train = set(_questions(taskset, "train", shape.tier))
        report.append(
            TierOverlap(
                tier=shape.tier,
                num_terms=shape.num_terms,
                num_digits=shape.num_digits,
                test_items=len(test),
                distinct_test_questions=len(set(test)),
                distinct_train_questions=len(train),
                test_items_in_train=sum(q in train for q in test),
            )
        )
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", type=int, default=None)
    parser.add_argument("--schedule", choices=("lockstep", "interleaved"), default="lockstep")
    args = parser.parse_args(argv)
    tiers = args.tiers if args.tiers is not None else (10 if args.schedule == "interleaved" else 5)
    print("| tier | terms x digits | test items | distinct test | distinct train | test items also in train |")
    print("|---:|---:|---:|---:|---:|---:|")
    for row in overlap_report(ChainSumTaskset(tiers, args.schedule)):
        print(
            f"| {row.tier} | {row.num_terms} x {row.num_digits} | {row.test_items} | "
            f"{row.distinct_test_questions} | {row.distinct_train_questions} | {row.test_items_in_train} |"
        )


if __name__ == "__main__":
    main()
