"""`openenv_prime.samplers` stays standard library only and light: every trainer can afford to import it.
The test asserts the cause (which modules the import loads); benchmarks/imports.py measures the time."""

import json
import subprocess
import sys

from benchmarks import imports as import_bench
from tests.support.waiting import HANG_GUARD_S

# Standard-library packages that each cost milliseconds to import; the samplers need none of them.
COSTLY_STDLIB = ("asyncio", "concurrent", "email", "http", "logging", "multiprocessing", "ssl", "sqlite3", "subprocess",
                 "unittest", "urllib", "xml")

PROBE = """
import json, sys
before = set(sys.modules)
import openenv_prime.samplers
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _loaded() -> list[str]:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=HANG_GUARD_S, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_samplers_import_loads_only_the_standard_library_and_themselves():
    loaded = _loaded()
    ours = {"openenv_prime", "openenv_prime.samplers"}
    outside = [m for m in loaded if m.split(".")[0] not in sys.stdlib_module_names
               and m not in ours and not m.startswith("openenv_prime.samplers.")]
    assert outside == []
    assert "openenv_prime.samplers.curriculum" in loaded  # the probe did see the package's own modules


def test_samplers_import_no_costly_standard_library_package():
    assert [m for m in _loaded() if m.split(".")[0] in COSTLY_STDLIB] == []


def test_import_benchmark_prints_its_table(capsys, monkeypatch):
    monkeypatch.setattr(import_bench, "MODULES", ("openenv_prime.samplers",))
    assert import_bench.main(["--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "openenv_prime.samplers" in out and "CPU ms (min)" in out
