"""A benchmark suite for task samplers: simulated worlds (``worlds``), the samplers other trainers ship
(``peers``), and the runner that prints a table per world (``suite``; script: benchmarks/curriculum_suite.py).
Standard library only; every run is seeded and reproducible."""
