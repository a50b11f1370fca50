"""The sampler settings a resumed run takes from its checkpoint.

A default can change between releases: the curriculum's rule became ``signal="frontier"``, ``within="signal"``, then
``signal="calibrated"`` and frontier again, and runs saved before hold states of ``signal="headroom"``, ``within="cycle"`` while their
config.toml says only ``sampler.kwargs = {}``. A sampler refuses a state saved under other settings, so such a run
could not resume. Nothing is lost instead: a setting the config leaves at its default takes the value the
checkpoint's sampler state was saved with (and a note says so); a setting the config does set must agree with the
checkpoint, or the run stops before anything loads, naming the key and both values. The seed is left alone: it only
picks the first RNG state, which the state carries. (The prime-rl adapter lets new settings win over a checkpoint's,
keeping the statistics; here a resumed run continues exactly, so the saved settings win.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openenv_prime.mlx_trainer.config import TrainConfig, sampler_kwargs
from openenv_prime.mlx_trainer.errors import TrainingError


def resumed_sampler_kwargs(config: TrainConfig, saved: Any, checkpoint: Path) -> tuple[dict[str, Any], list[str]]:
    """The sampler's keyword arguments for a run resumed from ``checkpoint``, whose sampler state is ``saved``, and
    a note per setting taken from it."""
    from openenv_prime.samplers import make_sampler
    from openenv_prime.samplers.task import Task

    kwargs = sampler_kwargs(config)
    fresh = make_sampler(config.sampler.name, [Task("train", 0, "0")], **kwargs)  # its settings; the tasks do not matter
    current = fresh.state_dict()
    if not isinstance(saved, dict) or saved.get("sampler") != current["sampler"] or not isinstance(saved.get("config"), dict):
        return kwargs, []  # another sampler, or no state: load_state_dict names what is wrong
    saved_config = {**type(fresh).LEGACY_CONFIG, **saved["config"]}
    given = {f"sampler.kwargs.{key}" for key in config.sampler.kwargs} | {"grpo.group_size"}
    notes, conflicts = [], []
    for key, value in current["config"].items():
        old = saved_config.get(key, value)
        if key == "seed" or old == value:
            continue
        setting = "grpo.group_size" if key == "group_size" else f"sampler.kwargs.{key}"
        if setting in given:
            conflicts.append(f"{setting} = {value!r}, but the sampler was saved with {key} = {old!r}")
        else:
            kwargs[key] = old
            notes.append(f"--resume: the checkpoint's sampler was saved with {key} = {old!r}; the config leaves "
                         f"{setting} at its default ({value!r} in this release), so the run continues with {old!r}")
    if conflicts:
        raise TrainingError(
            f"--resume: the config's sampler settings differ from those of the checkpoint {checkpoint}: "
            f"{'; '.join(conflicts)}. A sampler continues only under the settings it was saved with: set them to the "
            "saved values (or remove them from sampler.kwargs), or start a new run with --out NEW_DIR"
        )
    return kwargs, notes
