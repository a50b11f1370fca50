"""The studies' tests: nothing in them may reach for the Hub (the comparison trains a tiny model built on the spot)."""

from __future__ import annotations

import os

os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
