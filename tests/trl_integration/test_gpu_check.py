"""scripts/gpu-check on this CPU machine: it refuses at once saying why (no CUDA; vllm missing with --vllm), its
options are checked, --plan shows the bf16 (and vLLM colocate) settings it would train with, and its table reads a
summary as examples/trl_smollm2.py writes it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu-check"


def gpu_check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, timeout=300, cwd=ROOT)


def test_without_cuda_it_refuses_at_once_saying_why():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: the check would run")
    done = gpu_check()
    assert done.returncode == 2 and "cannot run here: no CUDA device here" in done.stderr and done.stdout == ""


def test_with_vllm_where_vllm_is_missing_it_names_it():
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    done = gpu_check("--vllm")
    assert done.returncode == 2 and "missing: vllm" in done.stderr


@pytest.mark.parametrize("vllm", [False, True])
def test_the_plan_shows_the_settings_it_would_train_with(vllm):
    done = gpu_check("--plan", "--steps", "3", "--eval-every", "2", *(["--vllm"] if vllm else []))
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert (plan["steps"], plan["eval_every"]) == (3, 2)
    assert plan["command"][1:7] == [str(ROOT / "examples" / "trl_smollm2.py"), "--device", "cuda",
                                    *(["--vllm"] if vllm else []), "--seed", "0", "--steps"][:6]
    expected = {"use_cpu": False, "bf16": True}
    if vllm:
        expected |= {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3}
    assert plan["grpo_config"] == expected


@pytest.mark.parametrize("option, value", [("--steps", "0"), ("--eval-every", "0")])
def test_bad_options_are_refused_naming_them(option, value):
    done = gpu_check(option, value)
    assert done.returncode == 2 and f"{option} must be at least 1, got 0" in done.stderr


def test_help_lists_every_option():
    done = gpu_check("--help")
    assert done.returncode == 0
    for option in ("--steps", "--eval-every", "--vllm", "--seed", "--out", "--plan"):
        assert option in done.stdout


def test_the_table_reads_the_examples_summary():
    from benchmarks.trl.gpu_check import table

    summary = {"device": "NVIDIA H100 80GB HBM3", "vllm": False, "steps": 8, "seconds_per_step": 1.234,
               "overhead_share": 0.0012, "timers": {"eval": 9.87}, "peak_gpu_mb": 2048.4,
               "evals": [{"step": 0, "overall": 0.16}, {"step": 8, "overall": 0.41}]}
    row = table(summary).splitlines()[2]
    assert row == "| NVIDIA H100 80GB HBM3 | transformers | 8 | 1.23 | 0.12% | 9.9 | 2048 | 0.16 -> 0.41 (steps 0 -> 8) |"


def test_the_example_refuses_vllm_on_the_cpu():
    spec = importlib.util.spec_from_file_location("trl_smollm2", ROOT / "examples" / "trl_smollm2.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    device_settings = example.device_settings
    assert device_settings("cpu") == {"use_cpu": True, "bf16": False}
    with pytest.raises(ValueError, match="--vllm needs --device cuda"):
        device_settings("cpu", vllm=True)
