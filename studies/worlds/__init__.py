"""The learning simulator: worlds (``worlds``), the samplers other trainers ship (``peers``, ``peers2025``),
one simulator (``simulate``), the suite that prints a table per world (``suite``; ``python -m studies.worlds``)
and the ordered-tiers report (``tiers``; ``python -m studies.worlds.tiers``). Standard library and this
package only; every run is seeded and reproducible. ``peer_sampler`` puts a 2025 peer behind the package's sampler
interface for the real-run comparison (``studies.mlx_runs.compare``). See studies/README.md."""
