"""Each study is a module run from the repository root (`python -m studies.NAME --help`), whatever it imports."""

from __future__ import annotations

import pathlib
import subprocess
import sys

from tests.support.waiting import HANG_GUARD_S

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_each_study_module_starts():
    studies = {".".join(path.relative_to(ROOT).with_suffix("").parts[:-1] if path.name == "__main__.py"
                        else path.relative_to(ROOT).with_suffix("").parts)
               for path in (ROOT / "studies").rglob("*.py")
               if path.name == "__main__.py" or 'if __name__ == "__main__":' in path.read_text()}
    assert studies == {"studies.worlds", "studies.worlds.tiers", "studies.worlds.calibration", "studies.mlx_runs.compare",
                       "studies.mlx_runs.signal_quality", "studies.mlx_runs.default_run", "studies.trl_vs_mlx"}
    for name in sorted(studies):
        done = subprocess.run([sys.executable, "-m", name, "--help"], cwd=ROOT, capture_output=True, text=True,
                              timeout=HANG_GUARD_S)
        assert done.returncode == 0 and "usage:" in done.stdout, f"{name}: {done.stderr[-1000:]}"
