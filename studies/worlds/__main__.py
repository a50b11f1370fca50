"""``python -m studies.worlds``: the suite (``suite.py``); ``python -m studies.worlds.tiers``: the tiers report."""

from studies.worlds.suite import main

raise SystemExit(main())
