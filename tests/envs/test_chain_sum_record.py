"""chain_sum answers byte for byte what it answered as its own package (main 76e4bd1): task ids, seeds, specs, questions,
the scores of fixed replies, picks by seed, splits, metadata and the wire classes, on 150 tasks of each split and
schedule, so existing task ids, seeds, sampler states and checkpoints keep working."""

import gzip
import json
from pathlib import Path

import pytest

from tests.envs.chain_sum_record import TIERS_PER_SCHEDULE, record

FIXTURE = Path(__file__).parent / "fixtures" / "chain_sum_record.json.gz"


@pytest.fixture(scope="module")
def recorded() -> dict:
    return json.loads(gzip.decompress(FIXTURE.read_bytes()))


@pytest.fixture(scope="module")
def now() -> dict:
    return json.loads(json.dumps(record()))  # through JSON, as the fixture was


def test_the_fixture_covers_every_split_schedule_and_tier(recorded):
    for schedule, tiers in TIERS_PER_SCHEDULE.items():
        for split in ("train", "test"):
            tasks = recorded["schedules"][schedule]["tasks"][split]
            assert len(tasks) == 150
            assert {t["reset"]["task"]["tier"] for t in tasks.values()} == set(range(tiers))


@pytest.mark.parametrize("schedule", TIERS_PER_SCHEDULE)
@pytest.mark.parametrize("split", ["train", "test"])
def test_tasks_observations_and_scores_are_unchanged(recorded, now, schedule, split):
    old, new = recorded["schedules"][schedule]["tasks"][split], now["schedules"][schedule]["tasks"][split]
    assert sorted(new) == sorted(old)
    for index in old:
        assert new[index] == old[index], f"{schedule} {split} task {index}"


@pytest.mark.parametrize("schedule", TIERS_PER_SCHEDULE)
def test_picks_by_seed_splits_and_metadata_are_unchanged(recorded, now, schedule):
    for part in ("picks", "splits", "metadata"):
        assert now["schedules"][schedule][part] == recorded["schedules"][schedule][part], part


def test_wire_classes_are_unchanged(recorded, now):
    assert now["schemas"] == recorded["schemas"]
