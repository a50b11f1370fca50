"""Eval results as a Hugging Face dataset (the RFC's open question 4): the episodes and the per-family summary as
parquet, with a dataset card saying what was evaluated, on what, and when.

The folder is a dataset repository as the Hub lays one out, so ``datasets.load_dataset(DIR)`` reads it and the Hub
shows it as it is pushed::

    DIR/README.md                                   the card: YAML metadata (configs, openenv_eval) and a summary
    DIR/episodes/<split>-00000-of-00001.parquet     config "episodes" (the default): one row per episode
    DIR/families/<split>-00000-of-00001.parquet     config "families": one row per family

``<split>`` is the eval's split (``test``, ``heldout``...). The card's ``openenv_eval`` metadata holds the model, the
environment (its name and version as the server's ``/metadata`` reports them, the task source, and the repo id of
the environment's own dataset, the one with an ``environment.yaml``, where given: also listed in
``source_datasets``), the split, the eval config, the date, and for an in-training eval its step and the sampler's
counters. docs/evaluation.md describes the columns.

``datasets`` comes with the ``trl`` extra; it is imported only here, when a dataset is written.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx

from openenv_prime.evaluation.episodes import episode_rows
from openenv_prime.evaluation.result import EvalResult

EPISODES = "episodes"
FAMILIES = "families"
NEEDS = ("eval datasets need the `datasets` library, which is not installed: install the package's trl extra "
         "(pip install 'openenv-prime[trl]') or datasets alone (pip install 'datasets>=4')")


def require_datasets():
    """The ``datasets`` module; ImportError naming the extra to install when it is missing."""
    try:
        import datasets
    except ImportError:
        raise ImportError(NEEDS) from None
    return datasets


def _features(datasets) -> tuple[Any, Any]:
    """The episodes' and the families' columns, typed, so that a column with no value yet (no error, no tokens) keeps
    its type and every eval's dataset has the same schema."""
    V, L = datasets.Value, datasets.List
    integer, real, text, flag = V("int64"), V("float64"), V("string"), V("bool")
    episodes = datasets.Features({
        "step": integer, "key": text, "split": text, "index": integer, "family": text, "reward": real,
        "success": flag, "stop": text, "error": text, "steps": integer, "turns": integer, "invalid_actions": integer,
        "truncated": flag, "done": flag, "tokens": integer, "reply_chars": integer, "reply": text,
        "step_rewards": L(real), "messages": L({"role": text, "content": text}),
    })
    families = datasets.Features({
        "step": integer, "family": text, "tasks": integer, "solved": integer, "accuracy": real, "mean_reward": real,
        "truncated": integer, "ended_invalid": integer, "unscored": integer, "errored": integer,
    })
    return episodes, families


def server_metadata(base_url: str, timeout: float = 10.0) -> dict[str, Any]:
    """The environment's name and version from the server's ``/metadata`` (OpenEnv's ``EnvironmentMetadata``); {} where
    the server does not answer it."""
    try:
        response = httpx.get(f"{base_url.rstrip('/')}/metadata", timeout=timeout)
        found = response.json() if response.status_code == 200 else {}
    except (httpx.HTTPError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {key: found[key] for key in ("name", "version") if found.get(key) is not None}


def split_name(split: str) -> str:
    """The eval's split as a dataset split name (letters, digits and ``_``, parts joined by dots)."""
    name = re.sub(r"[^\w.]+", "_", split).strip("._")
    return re.sub(r"\.+", ".", name) or "eval"


def eval_about(result: EvalResult, *, model: dict[str, Any] | None = None, server: dict[str, Any] | None = None,
               env_dataset: str | None = None, record: dict[str, Any] | None = None) -> dict[str, Any]:
    """The card's ``openenv_eval`` metadata: what was evaluated (``model``), on what (the environment: ``server``'s
    name and version, the task source, ``env_dataset``), the split, config and date; ``record``: an in-training eval's
    record (its step and the sampler's counters)."""
    config = result.config
    about = {
        "model": model or {},
        "environment": {
            "env_name": result.env_name, **{f"server_{k}": v for k, v in (server or {}).items()},
            "task_source": f"task list {config.tasks}" if config.tasks else f"Task API at {config.base_url}",
            "dataset": env_dataset,
        },
        "split": result.split,
        "family_field": result.family_field,
        "accuracy": result.accuracy,
        "mean_reward": result.mean_reward,
        "episodes": result.episodes,
        "config": config.model_dump(mode="json"),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "openenv_prime": _version(),
    }
    if record is not None:
        about["training"] = {k: v for k, v in record.items() if k not in ("type", "accuracy", "n", "split")}
    return about


def save_dataset(result: EvalResult, out: str | Path, **about: Any) -> Path:
    """Write ``result`` to the folder ``out`` as a dataset (see the module's doc); ``about``: :func:`eval_about`'s
    keywords. The folder's earlier parquet files of these two configs are replaced."""
    datasets = require_datasets()
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} is a file; name a folder to write the eval dataset to")
    info = eval_about(result, **about)
    step = info.get("training", {}).get("step")
    split = split_name(result.split)
    episode_features, family_features = _features(datasets)
    rows = {
        EPISODES: episode_rows(result, step=step),
        FAMILIES: [{"step": step, **f.model_dump(mode="json")} for f in result.families],
    }
    tables = {  # the columns in the schema's order, whatever order the rows hold them in
        name: datasets.Dataset.from_list([{column: row.get(column) for column in features} for row in rows[name]],
                                         features=features)
        for name, features in ((EPISODES, episode_features), (FAMILIES, family_features))
    }
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # a bar per small file would only clutter the eval's output
    try:
        for name, table in tables.items():
            folder = out / name
            folder.mkdir(parents=True, exist_ok=True)
            for old in folder.glob("*.parquet"):
                old.unlink()
            table.to_parquet(str(folder / f"{split}-00000-of-00001.parquet"))
    finally:
        if bars:
            datasets.enable_progress_bars()
    (out / "README.md").write_text(dataset_card(info, split))
    return out


def dataset_card(info: dict[str, Any], split: str) -> str:
    """The README.md of the dataset: YAML metadata (the two configs, tags, ``source_datasets``, ``openenv_eval``)
    and a short summary in prose."""
    from huggingface_hub import DatasetCardData  # a dependency of datasets

    env = info["environment"]
    data = DatasetCardData(
        pretty_name=f"{env['env_name']} eval ({info['split']})",
        tags=["openenv", "openenv-prime", "eval-results"],
        source_datasets=[env["dataset"]] if env["dataset"] else None,
        configs=[{"config_name": name, "default": name == EPISODES,
                  "data_files": [{"split": split, "path": f"{name}/{split}-*.parquet"}]} for name in (EPISODES, FAMILIES)],
        openenv_eval=json.loads(json.dumps(info)),
    )
    model = info["model"].get("name", "an in-process model")
    lines = [
        f"# {model} on {env['env_name']} ({info['split']})", "",
        f"Episodes of an `openenv-prime` eval of **{model}** on the OpenEnv environment **{env['env_name']}**"
        + (f" (version {env['server_version']})" if env.get("server_version") else "")
        + f", split `{info['split']}`, tasks from the {env['task_source']}, on {info['date']}: accuracy "
        f"{info['accuracy']:.3f} over {info['episodes']} episodes.",
    ]
    if env["dataset"]:
        lines += ["", f"The environment's dataset: [{env['dataset']}](https://huggingface.co/datasets/{env['dataset']})."]
    if "training" in info:
        lines += ["", f"An in-training eval at optimizer step {info['training'].get('step')}; the sampler's counters "
                  f"then: " + ", ".join(f"{k} {v}" for k, v in info["training"].items() if k != "step") + "."]
    lines += ["", "```python", "from datasets import load_dataset", "",
              'episodes = load_dataset("REPO")                # one row per episode: messages, replies, rewards',
              'families = load_dataset("REPO", "families")    # accuracy per family', "```", "",
              "The columns, and the eval config in this card's `openenv_eval` metadata: docs/evaluation.md in the "
              "openenv-prime repository."]
    return f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines) + "\n"


def push_dataset(folder: str | Path, repo_id: str, *, private: bool = False, token: str | None = None) -> str:
    """Upload a folder :func:`save_dataset` wrote to the Hub dataset repository ``repo_id`` (created if missing), as
    it is, card included; the URL of the repository. Not run by the tests (they are offline)."""
    require_datasets()
    from huggingface_hub import HfApi  # the Hub client datasets pushes with

    api = HfApi(token=token)
    url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(folder),
                      commit_message="openenv-prime eval results")
    return str(url)


def _version() -> str:
    try:
        return metadata.version("openenv-prime")
    except metadata.PackageNotFoundError:
        return "unknown"
