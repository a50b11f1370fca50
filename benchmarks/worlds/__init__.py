"""The learning simulator: worlds (``worlds``), the samplers other trainers ship (``peers``, ``peers2025``),
one simulator (``simulate``), the suite that prints a table per world (``suite``; ``python -m benchmarks.worlds``)
and the ordered-tiers report (``tiers``; ``python -m benchmarks.worlds.tiers``). Standard library and this
package only; every run is seeded and reproducible. See benchmarks/README.md."""
