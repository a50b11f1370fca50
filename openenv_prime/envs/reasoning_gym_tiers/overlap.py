"""Which test items also occur in train, per dataset and tier.

Seeds never repeat across splits, but a tier with few distinct problems repeats questions anyway (e.g.
chain_sum tier 0, two 1-digit terms, has about 200). Items repeat only within their own dataset and tier,
so that is where this compares. Run
``python -m openenv_prime.envs.reasoning_gym_tiers.overlap --datasets leg_counting,basic_arithmetic --tiers 3``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from openenv_prime.envs.reasoning_gym_tiers.taskset import ReasoningGymTaskset


@dataclass(frozen=True)
class TierOverlap:
    dataset: str
    tier: int
    test_items: int
    distinct_test_questions: int
    distinct_train_questions: int
    test_items_in_train: int


def _questions(taskset: ReasoningGymTaskset, split: str, block: int) -> list[str]:
    per_tier = taskset.per_tier[split]
    return [taskset.entry(split, block * per_tier + i)["question"] for i in range(per_tier)]


def overlap_report(taskset: ReasoningGymTaskset) -> list[TierOverlap]:
    """Per (dataset, tier): how many test items have a question some train item of the same block has."""
    report = []
    for block, family in enumerate(taskset.families):
        dataset, tier = family.rsplit("/", 1)
        test = _questions(taskset, "test", block)
        train = set(_questions(taskset, "train", block))
        report.append(TierOverlap(dataset, int(tier), len(test), len(set(test)), len(train), sum(q in train for q in test)))
    return report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", required=True, help="comma-separated reasoning-gym datasets")
    parser.add_argument("--tiers", type=int, default=3)
    parser.add_argument("--train-size", type=int, default=10_000, help="train items per dataset and tier")
    parser.add_argument("--test-size", type=int, default=200, help="test items per dataset and tier")
    args = parser.parse_args(argv)
    taskset = ReasoningGymTaskset(
        [d.strip() for d in args.datasets.split(",")], args.tiers, {"train": args.train_size, "test": args.test_size}
    )
    print("| dataset | tier | test items | distinct test | distinct train | test items also in train |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in overlap_report(taskset):
        print(
            f"| {row.dataset} | {row.tier} | {row.test_items} | {row.distinct_test_questions} | "
            f"{row.distinct_train_questions} | {row.test_items_in_train} |"
        )


if __name__ == "__main__":
    main()
