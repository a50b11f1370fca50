"""reasoning-gym datasets in curriculum tiers: tiers read from the curriculum, disjoint seeds, families,
binary reward with the raw score kept, clear refusals, and a real server that `openenv-prime eval` runs on."""

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reasoning_gym import create_dataset
from reasoning_gym.factory import create_curriculum
from websockets.sync.client import connect

from openenv_prime.envs.errors import TaskIndexError, TaskRequestError
from openenv_prime.envs.launch import local_server
from openenv_prime.envs.reasoning_gym_tiers import DatasetError, ReasoningGymTaskset, check_datasets, dataset_tiers
from openenv_prime.envs.reasoning_gym_tiers.overlap import overlap_report
from openenv_prime.envs.reasoning_gym_tiers.scoring import score_reply
from openenv_prime.testing.scripted_openai import ScriptedOpenAIServer, last_user_text
from tests.conftest import OPENENV010_PYTHON_VAR

ROOT = Path(__file__).resolve().parents[2]
DATASETS = ("leg_counting", "basic_arithmetic", "chain_sum")
SIZES = {"train": 30, "test": 4}
TASKSET = ReasoningGymTaskset(DATASETS, 3, SIZES)


def test_tier_t_is_the_curriculum_at_global_level_t():
    from reasoning_gym.coaching.base_curriculum import DefaultCurriculumContext, RangeAttributeMode

    for name in DATASETS:
        tiers = dataset_tiers(name, 3)
        assert [t.family for t in tiers] == [f"{name}/0", f"{name}/1", f"{name}/2"]
        assert len({t.config for t in tiers}) == 3  # every tier is a different problem shape
        for tier in tiers:
            curriculum = create_curriculum(name)
            curriculum.set_global_level(tier.tier)
            config = curriculum.generate_configuration({"seed": 0, "size": 1}, DefaultCurriculumContext(mode=RangeAttributeMode.UPPER_BOUND))
            assert tier.config_dict() == {k: v for k, v in dataclasses.asdict(config).items() if k not in ("seed", "size")}
    # chain_sum read generically gives the same lockstep shapes as our chain_sum server: t+2 terms of t+1 digits
    shapes = [(t.config_dict()["min_terms"], t.config_dict()["min_digits"]) for t in dataset_tiers("chain_sum", 3)]
    assert shapes == [(2, 1), (3, 2), (4, 3)]


@pytest.mark.parametrize(
    "datasets, tiers, message",
    [
        (["leg_counting", "composite"], 2, "'composite' registers no curriculum"),
        (["nope"], 2, "unknown reasoning-gym dataset 'nope'; known datasets with a curriculum: ab, "),
        (["basic_arithmetic"], 6, "--tiers must be an integer from 1 to 5 for 'basic_arithmetic'"),
        (["chain_sum", "chain_sum"], 2, "must name distinct"),
    ],
)
def test_datasets_that_cannot_be_tiered_are_named(datasets, tiers, message):
    with pytest.raises(DatasetError, match=message):
        ReasoningGymTaskset(datasets, tiers)


def test_a_dataset_that_cannot_make_an_item_is_named(monkeypatch):
    import openenv_prime.envs.reasoning_gym_tiers.layout as layout

    def missing_files(dataset, *args):
        raise FileNotFoundError(f"data/{dataset}.json")

    monkeypatch.setattr(layout, "_item", missing_files)
    with pytest.raises(DatasetError, match=r"'leg_counting' cannot make an item at tier 0 \(FileNotFoundError: data/leg_counting.json\); it may need data files"):
        check_datasets(["leg_counting"], 2)


def test_a_curriculum_whose_easiest_level_reasoning_gym_rejects_is_named():
    # reasoning-gym 0.1.25: caesar_cipher's level-2 config fails its own check (rotation must be in range [1,25])
    check_datasets(["caesar_cipher"], 2)
    with pytest.raises(DatasetError, match=r"'caesar_cipher' cannot make an item at tier 2 \(AssertionError: .*level-2 config"):
        check_datasets(["chain_sum", "caesar_cipher"], 3)


def test_spec_fields_family_and_index_layout():
    spec = TASKSET.get_task("test", 33)  # block 8 = chain_sum (dataset 2) tier 2, local 1
    assert spec == {
        "id": "chain_sum/test/t2/1", "split": "test", "index": 33, "family": "chain_sum/2", "dataset": "chain_sum",
        "tier": 2, "local_index": 1, "seed": TASKSET.seed_base("test", "chain_sum", 2) + 1,
    }
    assert TASKSET.families == [f"{d}/{t}" for d in DATASETS for t in range(3)]
    assert TASKSET.num_tasks("test") == 36 and [s["name"] for s in TASKSET.list_splits()] == ["train", "test"]
    assert {s["family_field"] for s in TASKSET.list_splits()} == {"family"}  # the declaration consumers read
    assert [t["index"] for t in TASKSET.get_task_range("test", 34, 99)] == [34, 35]


def test_seeds_are_disjoint_across_splits_datasets_and_tiers_and_below_2_32():
    ranges = sorted(
        (TASKSET.seed_base(split, d, t), size) for split, size in SIZES.items() for d in DATASETS for t in range(3)
    )
    for (start, size), (next_start, _) in zip(ranges, ranges[1:]):
        assert start + size <= next_start
    wide = ReasoningGymTaskset(["leg_counting"], 16, {"train": 1_000_000, "test": 1_000_000})
    assert wide.get_task("test", wide.num_tasks("test") - 1)["seed"] < 2**32


@settings(max_examples=40, deadline=None)
@given(split=st.sampled_from(["train", "test"]), data=st.data())
def test_each_task_is_reasoning_gyms_item_for_its_tier_and_seed(split, data):
    index = data.draw(st.integers(0, TASKSET.num_tasks(split) - 1))
    spec = TASKSET.get_task(split, index)
    config = dataset_tiers(spec["dataset"], 3)[spec["tier"]].config_dict()
    assert TASKSET.entry(split, index) == create_dataset(spec["dataset"], **config, seed=spec["seed"], size=1)[0]
    assert spec["family"] == f"{spec['dataset']}/{spec['tier']}"


def test_bad_requests_name_the_field():
    with pytest.raises(TaskRequestError, match="unknown split 'dev'; known splits: train, test"):
        TASKSET.get_task("dev", 0)
    with pytest.raises(TaskIndexError, match=r"out of range for split 'test' \(0..35\)"):
        TASKSET.get_task("test", 36)
    with pytest.raises(TaskRequestError, match="unknown dataset 'gsm'"):
        TASKSET.pick_index(1, "test", dataset="gsm")


@pytest.mark.parametrize(
    "reply, reward",
    [("{a}", 1.0), ("The answer is {a}", 1.0), ("<answer>{a}</answer>", 1.0), ("{a}0", 0.0), ("{a} or 7777", 0.0), ("", 0.0)],
)
def test_reward_is_binary_and_the_raw_score_is_reasoning_gyms(reply, reward):
    entry = TASKSET.entry("test", 0)  # leg_counting tier 0
    got, raw, _ = score_reply("leg_counting", reply.format(a=entry["answer"]), entry)
    assert got == reward
    from reasoning_gym import get_score_answer_fn

    assert raw == get_score_answer_fn("leg_counting")(reply.format(a=entry["answer"]), entry)


def test_partial_credit_stays_in_the_raw_score_only():
    entry = TASKSET.entry("test", 0)
    reward, raw, extracted = score_reply("leg_counting", f"{entry['answer']}0", entry)
    assert reward == 0.0 and 0 < raw < 1 and extracted is None


def test_overlap_report_per_dataset_and_tier():
    rows = overlap_report(TASKSET)
    assert [(r.dataset, r.tier) for r in rows] == [(d, t) for d in DATASETS for t in range(3)]
    assert all(r.test_items == 4 and 0 <= r.test_items_in_train <= 4 for r in rows)
    chain_sum_top = rows[-1]
    assert chain_sum_top.test_items_in_train == 0 and chain_sum_top.distinct_train_questions == 30


@pytest.mark.parametrize("train", [30, 64])
def test_heldout_questions_never_occur_in_train_and_each_comes_once(train):
    """Tier 0 of leg_counting and products has about a hundred problems: test repeats train there, heldout never does."""
    sizes = {"train": train, "test": 200, "heldout": 16}
    taskset = ReasoningGymTaskset(["leg_counting", "products"], 2, sizes)
    taskset.check_heldout()
    assert [s["name"] for s in taskset.list_splits()] == ["train", "test", "heldout"]
    assert taskset.num_tasks("heldout") == 16 * 4
    for block, family in enumerate(taskset.families):
        train_questions = {taskset.entry("train", block * train + i)["question"] for i in range(train)}
        test_questions = [taskset.entry("test", block * 200 + i)["question"] for i in range(200)]
        specs = [taskset.get_task("heldout", block * 16 + i) for i in range(16)]
        held = [taskset.entry("heldout", s["index"])["question"] for s in specs]
        assert not set(held) & train_questions and len(set(held)) == 16, family
        assert all(s["family"] == family and s["id"] == f"{family.replace('/', '/heldout/t')}/{i}" for i, s in enumerate(specs))
        test_base = taskset.seed_base("test", specs[0]["dataset"], specs[0]["tier"])
        assert all(test_base <= s["seed"] < test_base + 1_000_000 for s in specs)  # heldout items are test items
        if family.endswith("/0"):
            assert sum(q in train_questions for q in test_questions) > 0  # what heldout is for


def test_a_tier_with_too_few_new_questions_is_refused_by_name():
    taskset = ReasoningGymTaskset(["products"], 2, {"train": 400, "test": 200, "heldout": 32})
    with pytest.raises(DatasetError, match=r"products/0 has only \d+ questions that none of its 400 train items asks.*"
                                           r"lower --heldout-size or --train-size"):
        taskset.check_heldout()
    with pytest.raises(ValueError, match="needs a train size too"):
        ReasoningGymTaskset(["products"], 2, {"test": 200, "heldout": 32})


def test_serve_refuses_a_heldout_split_it_cannot_fill():
    done = subprocess.run(
        [sys.executable, "-m", "openenv_prime", "serve", "reasoning-gym", "--datasets", "products", "--tiers", "1",
         "--train-size", "400", "--heldout-size", "32", "--port", "0"], capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "products/0 has only" in done.stderr and "--heldout-size 32" in done.stderr


# -- a real server ------------------------------------------------------------------------------


@pytest.fixture(scope="module", params=["openenv041", "openenv010"])
def server(request):
    python = None
    if request.param == "openenv010":
        python = os.environ.get(OPENENV010_PYTHON_VAR)
        if not python:
            pytest.skip(f"{OPENENV010_PYTHON_VAR} is unset: no openenv 0.10.0 interpreter")
    args = ["--train-size", str(SIZES["train"]), "--test-size", str(SIZES["test"])]
    with local_server("reasoning-gym", datasets=DATASETS, tiers=3, python=python, extra_args=args) as url:
        yield url


def test_server_task_api_lists_families(server):
    with httpx.Client(base_url=server, timeout=30) as http:
        assert http.get("/list_environments").json() == ["reasoning_gym"]
        tasks = http.post("/reasoning_gym/task_range", json={"split": "test"}).json()["tasks"]
        assert tasks == TASKSET.get_task_range("test")
        assert sorted({t["family"] for t in tasks}) == sorted(TASKSET.families)
        unknown = http.post("/reasoning_gym/task", json={"split": "dev", "index": 0})
        assert unknown.status_code == 422 and unknown.json()["detail"][0]["loc"] == ["body", "split"]
        assert http.post("/reasoning_gym/task", json={"split": "test", "index": 36}).status_code == 400


def test_server_episode_scores_binary_and_keeps_the_raw_score(server):
    with connect(server.replace("http://", "ws://") + "/ws", open_timeout=30) as ws:
        for index in (0, 13, 35):
            entry = TASKSET.entry("test", index)
            ws.send(json.dumps({"type": "reset", "data": {"split": "test", "index": index}}))
            obs = json.loads(ws.recv(timeout=30))["data"]["observation"]
            assert obs["question"] == entry["question"] and obs["task"] == TASKSET.get_task("test", index)
            ws.send(json.dumps({"type": "step", "data": {"answer": f"The answer is {entry['answer']}"}}))
            step = json.loads(ws.recv(timeout=30))["data"]
            assert step["reward"] == 1.0 and step["observation"]["correct_answer"] == entry["answer"]
            assert 0 < step["observation"]["score"] < 1  # reasoning-gym's partial credit for the sentence


def _answer_rule(correct_datasets):
    """Knows every test question; answers right for `correct_datasets`, "I don't know" otherwise."""
    known = {}
    for index in range(TASKSET.num_tasks("test")):
        spec, entry = TASKSET.get_task("test", index), TASKSET.entry("test", index)
        known[entry["question"].strip()] = (spec["dataset"], entry["answer"])

    def rule(request):
        text = last_user_text(request)
        matches = [q for q in known if q in text]
        if not matches:
            return "I don't know"
        dataset, answer = known[max(matches, key=len)]
        return answer if dataset in correct_datasets else "I don't know"

    return rule


def test_eval_reports_nine_families_the_server_declares_without_a_flag(server, tmp_path):
    out = tmp_path / "report.json"
    with ScriptedOpenAIServer(_answer_rule({"leg_counting", "chain_sum"})) as model_url:
        run = subprocess.run(
            [sys.executable, "-m", "openenv_prime", "eval", "--base-url", server, "--model", "scripted",
             "--model-base-url", model_url, "--per-family", "2", "--out", str(out)],
            capture_output=True, text=True, timeout=300, env=dict(os.environ, COLUMNS="120", PYTHONPATH=str(ROOT)), cwd=ROOT,
        )
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(out.read_text())
    accuracy = {f["family"]: f["accuracy"] for f in report["families"]}
    assert accuracy == {f"{d}/{t}": (0.0 if d == "basic_arithmetic" else 1.0) for d in DATASETS for t in range(3)}
    assert report["env_name"] == "reasoning_gym" and len(report["results"]) == 18
    assert report["family_field"] == "family" and "grouped by their 'family' field, which the server names" in run.stderr
