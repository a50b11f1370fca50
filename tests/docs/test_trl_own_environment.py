"""docs/trl.md's "Your own environment" runs as written, offline: its environment module and task-list script are
written out and run, its `openenv-prime serve` line serves them, its train.py trains, evaluates and saves, with the
model it loads set through its own MODEL variable to a tiny random Llama (tests/trl_integration/tiny.py), and its
`openenv-prime eval --model-path` line evaluates the saved model as the last in-training eval did. The only other change
is the port: the doc's 8000 becomes a free one. The variant without a Task API puts the doc's changed statement into
train.py and runs it against the same environment served by openenv's own `create_app`; the tool-mode script runs
shortened to 2 steps (the keywords changed are named below, and each must be in the script)."""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.docs.markdown_blocks import ROOT, Block, blocks
from tests.support.processes import free_port, serving

pytest.importorskip("trl", reason="TRL is not installed (the `trl` extra)")

PAGE = ROOT / "docs" / "trl.md"
SECTION = "## Your own environment"
DOC_URL = "http://127.0.0.1:8000"
REMOTE_URL = "https://my-env.example.org"  # the doc's server without a Task API
TOOL_RUN = {"max_steps": 2, "save_steps": 2, "per_device_train_batch_size": 8, "max_completion_length": 32,
            "per_family": 2}  # the tool-mode script's run, shortened: a tool-loop step of the tiny model is slow
SHORT_RUN = {"max_steps": 2, "save_steps": 2, "every": 2, "per_family": 2}  # the variant without a Task API: the
# same script but one statement, so a short run shows it trains from the task list; the full run is the main test's
RUN_GUARD_S = 900  # a hang guard for a training run, not a speed limit


def section_blocks() -> list[Block]:
    """The fenced blocks of docs/trl.md's "Your own environment" section (its subsections included)."""
    lines = PAGE.read_text().splitlines()
    start = lines.index(SECTION) + 1
    end = next((i + 1 for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines) + 1)
    found = [b for b in blocks(PAGE) if start < b.line < end]
    assert found, f"{PAGE} has no blocks under {SECTION!r}"
    return found


def doc_files() -> dict[str, str]:
    """The section's files: each python block whose first line is `# PATH.py`."""
    files = {}
    for block in section_blocks():
        named = re.fullmatch(r"# ([\w/]+\.py)", block.code.splitlines()[0]) if block.lang == "python" else None
        if named:
            files[named.group(1)] = block.code
    assert {"my_env/server.py", "make_tasks.py", "train.py", "train_tools.py"} <= set(files), sorted(files)
    return files


def shell_lines() -> list[str]:
    """The commands of the section's bash blocks, in order (comments and a trailing `&` dropped)."""
    code = "\n".join(b.code for b in section_blocks() if b.lang == "bash")
    return [line.split("#")[0].strip().removesuffix("&").strip() for line in code.splitlines() if line.strip()]


def doc_command(program: str, url: str) -> list[str]:
    """The section's one ``openenv-prime PROGRAM`` line as argv for this interpreter, its server ``url``."""
    (line,) = [line for line in shell_lines() if line.startswith(f"openenv-prime {program} ")]
    return [sys.executable, "-m", "openenv_prime", *shlex.split(line.replace(DOC_URL, url))[1:]]


def statement(code: str, name: str) -> tuple[int, int]:
    """The first and last line (1-based) of the top-level statement assigning ``name``."""
    (node,) = [n for n in ast.parse(code).body if isinstance(n, ast.Assign) and
               any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
    return node.lineno, node.end_lineno


def with_statement(code: str, replacement: str, name: str) -> str:
    """``code`` with its statement assigning ``name`` replaced by ``replacement``."""
    first, last = statement(code, name)
    lines = code.splitlines()
    return "\n".join(lines[:first - 1] + replacement.rstrip("\n").splitlines() + lines[last:]) + "\n"


def keyword(code: str, name: str):
    """The literal value of the one keyword argument ``name`` in ``code``'s calls."""
    (value,) = [k.value for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call) for k in n.keywords if k.arg == name]
    return ast.literal_eval(value)


def with_keywords(code: str, values: dict) -> str:
    """``code`` with the value of each keyword argument named in ``values`` replaced (each must occur once)."""
    lines = code.splitlines()
    found = {}
    for node in ast.walk(ast.parse(code)):
        for k in getattr(node, "keywords", []) if isinstance(node, ast.Call) else []:
            if k.arg in values:
                assert k.arg not in found, f"keyword {k.arg} occurs twice"
                assert k.value.lineno == k.value.end_lineno, f"keyword {k.arg} spans lines"
                found[k.arg] = k.value
    assert set(found) == set(values), f"the script has no keyword {sorted(set(values) - set(found))}"
    for name, value in sorted(found.items(), key=lambda item: (item[1].lineno, item[1].col_offset), reverse=True):
        line = lines[value.lineno - 1].encode()
        lines[value.lineno - 1] = (line[:value.col_offset] + repr(values[name]).encode() + line[value.end_col_offset:]).decode()
    return "\n".join(lines) + "\n"


def environ(**more: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1", "TRANSFORMERS_VERBOSITY": "error", **more}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """An empty folder after the section's steps 1 and 2: my_env/server.py written, the task list made."""
    folder = tmp_path_factory.mktemp("own-env")
    for name, code in doc_files().items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(code)
    for line in shell_lines():
        if line.startswith("python "):
            done = subprocess.run([sys.executable, *shlex.split(line)[1:]], cwd=folder, env=environ(),
                                  capture_output=True, text=True, timeout=120)
            assert done.returncode == 0, f"{line}: {done.stderr[-2000:]}"
    assert (folder / "tasks.jsonl").is_file()
    return folder


@pytest.fixture(scope="module")
def tasks(workdir) -> list[dict]:
    return [json.loads(line) for line in (workdir / "tasks.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory) -> Path:
    """The tiny random Llama and its character tokenizer, saved as a transformers directory (what MODEL names)."""
    from tests.trl_integration.tiny import save_tiny

    return save_tiny(tmp_path_factory.mktemp("tiny-model"))


@pytest.fixture(scope="module")
def own_server(workdir):
    """Step 3: the doc's `openenv-prime serve` line, run in the folder, on a free port."""
    (line,) = [line for line in shell_lines() if line.startswith("openenv-prime serve ")]
    argv = shlex.split(line)
    assert argv[argv.index("--port") + 1] == DOC_URL.rsplit(":", 1)[1]
    port = free_port()
    argv[argv.index("--port") + 1] = str(port)
    url = f"http://127.0.0.1:{port}"
    with serving([sys.executable, "-m", "openenv_prime", *argv[1:]], f"{url}/health", workdir / "serve.log", cwd=workdir):
        yield url


@pytest.fixture(scope="module")
def plain_server(workdir):
    """The same environment served by openenv's own create_app: /reset and /step, no Task API."""
    port = free_port()
    code = ("import sys; sys.modules.setdefault('gradio', None)\n"  # openenv's web UI is not needed
            "import uvicorn\n"
            "from openenv.core.env_server import create_app\n"
            "from openenv_prime.envs.taskapi.classes import infer_classes\n"
            "from my_env.server import MyEnvironment\n"
            "action, observation, _ = infer_classes(MyEnvironment)\n"
            "app = create_app(MyEnvironment, action, observation, env_name='my_env', max_concurrent_envs=64)\n"
            f"uvicorn.run(app, host='127.0.0.1', port={port}, log_level='warning')\n")
    url = f"http://127.0.0.1:{port}"
    env = environ(PYTHONPATH=os.pathsep.join([str(workdir), str(ROOT)]))
    with serving([sys.executable, "-c", code], f"{url}/health", workdir / "plain.log", env=env, cwd=workdir):
        yield url


def run_script(code: str, folder: Path, workdir: Path, tiny_dir: Path) -> subprocess.CompletedProcess:
    """Run ``code`` as the doc's user would, in ``folder`` beside a copy of the task list, MODEL set to the tiny model."""
    shutil.copy(workdir / "tasks.jsonl", folder / "tasks.jsonl")
    (folder / "script.py").write_text(code)
    done = subprocess.run([sys.executable, "script.py"], cwd=folder, env=environ(MODEL=str(tiny_dir)),
                          capture_output=True, text=True, timeout=RUN_GUARD_S)
    assert done.returncode == 0, f"the doc's script failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def check_run(out: Path, code: str, tasks: list[dict]) -> dict:
    """What the doc says a run leaves: every step trained, a checkpoint every save_steps holding the sampler's state, a
    saved model, one eval per scheduled step on the test split's families, and every group reported to the sampler."""
    steps, save_steps = keyword(code, "max_steps"), keyword(code, "save_steps")
    every, per_family = keyword(code, "every"), keyword(code, "per_family")
    checkpoints = sorted(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*"))
    assert checkpoints == list(range(save_steps, steps + 1, save_steps))
    state = json.loads((out / f"checkpoint-{steps}" / "trainer_state.json").read_text())
    assert state["global_step"] == steps
    assert "OpenEnvPrime" in state["stateful_callbacks"]  # the sampler's state, for a resume
    assert (out / "final" / "config.json").is_file() and (out / "final" / "model.safetensors").is_file()
    assert (out / "final" / "tokenizer_config.json").is_file()

    records = [json.loads(line) for line in (out / "evals.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == sorted({0, steps, *range(every, steps + 1, every)})
    test_families = Counter(t["family"] for t in tasks if t["split"] == "test")
    for record in records:
        assert record["split"] == "test"
        assert record["n"] == {family: min(per_family, count) for family, count in test_families.items()}
        # every group of every step reached the sampler: the episodes it was told of are all the completions
        assert record["episodes"] == record["step"] * state["train_batch_size"]
    logged = [h["step"] for h in state["log_history"] if "openenv/eval/accuracy" in h]
    assert logged == [r["step"] for r in records]  # the evals went through the trainer's logger too
    return state


def test_the_task_list_has_train_and_test_tasks_that_never_share_a_question(tasks):
    splits = Counter(t["split"] for t in tasks)
    assert set(splits) == {"train", "test"} and splits["test"] > 0 and splits["train"] > splits["test"]
    questions = {split: {json.dumps(t["reset"], sort_keys=True) for t in tasks if t["split"] == split} for split in splits}
    assert not questions["train"] & questions["test"]


def test_the_own_environment_script_trains_evaluates_and_saves(workdir, tasks, own_server, tiny_dir, tmp_path):
    code = doc_files()["train.py"]
    assert code.count(DOC_URL) == 1
    done = run_script(code.replace(DOC_URL, own_server), tmp_path, workdir, tiny_dir)
    check_run(tmp_path / "runs" / "my-env", code, tasks)
    # before training it printed a row's prompt as the model sees it: the system prompt, then a train question
    assert "Reply with only the final number." in done.stdout and "What is " in done.stdout

    # step 5: the doc's eval of the saved model, in this process, asks and answers as the last in-training eval did
    evaluated = subprocess.run(doc_command("eval", own_server), cwd=tmp_path, env=environ(), capture_output=True,
                               text=True, timeout=RUN_GUARD_S)
    assert evaluated.returncode == 0, evaluated.stderr[-3000:]
    out = tmp_path / "runs" / "my-env"
    report = json.loads((out / "final-eval.json").read_text())
    last = json.loads((out / "evals.jsonl").read_text().splitlines()[-1])
    assert report["split"] == "test" and {f["family"]: f["accuracy"] for f in report["families"]} == last["accuracy"]
    here = {r["index"]: r for r in map(json.loads, (out / "final-eval.episodes.jsonl").read_text().splitlines())}
    kept = [r for r in map(json.loads, (out / "episodes.jsonl").read_text().splitlines()) if r["step"] == last["step"]]
    assert kept and all(here[r["index"]]["messages"] == r["messages"] for r in kept)
    shown = subprocess.run(doc_command("show", own_server), cwd=tmp_path, env=environ(), capture_output=True,
                           text=True, timeout=RUN_GUARD_S)
    assert shown.returncode == 0 and "What is " in shown.stdout, shown.stderr[-2000:]


def test_the_script_trains_on_a_server_without_a_task_api_from_the_task_list(workdir, tasks, plain_server, tiny_dir,
                                                                             tmp_path):
    import httpx

    assert httpx.get(f"{plain_server}/my_env/splits").status_code != 200  # no Task API
    (changed,) = [b.code for b in section_blocks() if b.lang == "python" and REMOTE_URL in b.code]
    code = with_keywords(with_statement(doc_files()["train.py"], changed, "openenv"), SHORT_RUN)
    assert 'tasks="tasks.jsonl"' in code and DOC_URL not in code
    run_script(code.replace(REMOTE_URL, plain_server), tmp_path, workdir, tiny_dir)
    check_run(tmp_path / "runs" / "my-env", code, tasks)


def test_the_tool_mode_script_trains_with_a_tool_calling_template(workdir, tasks, own_server, tiny_dir, tmp_path):
    code = with_keywords(doc_files()["train_tools.py"], TOOL_RUN)
    assert code.count(DOC_URL) == 1 and "tool_mode=True" in code
    run_script(code.replace(DOC_URL, own_server), tmp_path, workdir, tiny_dir)
    out = tmp_path / "runs" / "my-env-tools"
    check_run(out, code, tasks)
    saved = (out / "final" / "chat_template.jinja").read_text()
    assert "<tool_call>" in saved  # the tokenizer trained and saved with the doc's tool-calling template
