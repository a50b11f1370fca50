"""The curriculum against peer samplers in many worlds: one table per world, over seeds.

Run: .venv/bin/python benchmarks/curriculum_suite.py [--seeds 10] [--worlds ...] [--quick]
(the worlds, peers and metrics are described in benchmarks/worlds/).
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # the repository root, for `benchmarks.worlds`

from benchmarks.worlds.suite import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())
