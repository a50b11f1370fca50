"""examples/trl_smollm2.py trains against a server it did not start (`--base-url`), here chain_sum with its test split
and tier families named by `--test-split` and `--family-field`, on a model directory given by `--model` (the tiny
random Llama: two blocks, so the example's LoRA on the last 8 blocks covers both)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.docs.markdown_blocks import ROOT
from tests.trl_integration.tiny import save_tiny

GROUP = 8  # the example's group size
PER_STEP = 32  # the example's completions per step


def test_the_example_trains_on_a_server_it_did_not_start(chain_sum_server, tmp_path):
    model = save_tiny(tmp_path / "tiny")
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "trl_smollm2.py"), "--base-url", chain_sum_server, "--model", str(model),
         "--steps", "1", "--eval-every", "1", "--out", str(out), "--test-split", "test", "--family-field", "tier"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)  # a hang guard, not a speed limit
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert "greedy eval (step 0 -> 1)" in done.stdout

    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 1
    assert summary["sampler"]["groups"] == PER_STEP // GROUP  # every group of the step reached the sampler
    assert summary["sampler"]["episodes"] == PER_STEP
    tiers = {str(tier) for tier in range(5)}  # the chain_sum server's five tiers, not reasoning-gym's families
    assert [e["step"] for e in summary["evals"]] == [0, 1]
    for record in summary["evals"]:
        assert record["split"] == "test" and set(record["accuracy"]) == tiers
        assert record["n"] == {tier: 32 for tier in tiers}
    assert len((out / "evals.jsonl").read_text().splitlines()) == 2
    adapter = json.loads((out / "checkpoint-1" / "adapter_config.json").read_text())
    assert adapter["layers_to_transform"] == [0, 1]  # the last 8 blocks of a 2-block model: both
