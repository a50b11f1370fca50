"""``python -m benchmarks.worlds``: the suite (``suite.py``); ``python -m benchmarks.worlds.tiers``: the tiers report."""

from benchmarks.worlds.suite import main

raise SystemExit(main())
