"""Which test items also occur in train, per dataset and tier.

Seeds never repeat across splits, but a tier with few distinct problems repeats questions anyway (e.g.
chain_sum tier 0, two 1-digit terms, has about 200). Items repeat only within their own dataset and tier,
so that is where this compares. Run it on either server's layout:
``python -m openenv_prime.envs.reasoning_gym_tiers.overlap reasoning-gym --datasets leg_counting,basic_arithmetic --tiers 3``
or ``python -m openenv_prime.envs.reasoning_gym_tiers.overlap chain-sum [--schedule interleaved] [--tiers N]``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from openenv_prime.envs.reasoning_gym_tiers.chain_sum import CHAIN_SUM_SCHEDULES, DEFAULT_TIERS, ChainSumTaskset
from openenv_prime.envs.reasoning_gym_tiers.layout import ReasoningGymTaskset


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
    parser.add_argument("server", choices=("reasoning-gym", "chain-sum"), help="whose layout (seeds per split and tier)")
    parser.add_argument("--datasets", help="reasoning-gym: comma-separated datasets")
    parser.add_argument("--tiers", type=int, default=None, help="default: 3 (reasoning-gym), 5 or 10 (chain-sum)")
    parser.add_argument("--schedule", choices=CHAIN_SUM_SCHEDULES, default="lockstep", help="chain-sum: the tier schedule")
    parser.add_argument("--train-size", type=int, default=10_000, help="train items per dataset and tier")
    parser.add_argument("--test-size", type=int, default=200, help="test items per dataset and tier")
    args = parser.parse_args(argv)
    sizes = {"train": args.train_size, "test": args.test_size}
    if args.server == "chain-sum":
        tiers = DEFAULT_TIERS[args.schedule] if args.tiers is None else args.tiers
        taskset = ChainSumTaskset(tiers, args.schedule, sizes)
    elif not args.datasets:
        parser.error("reasoning-gym needs --datasets NAME[,NAME...]")
    else:
        taskset = ReasoningGymTaskset([d.strip() for d in args.datasets.split(",")], 3 if args.tiers is None else args.tiers, sizes)
    print("| dataset | tier | test items | distinct test | distinct train | test items also in train |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in overlap_report(taskset):
        print(
            f"| {row.dataset} | {row.tier} | {row.test_items} | {row.distinct_test_questions} | "
            f"{row.distinct_train_questions} | {row.test_items_in_train} |"
        )


if __name__ == "__main__":
    main()
