"""The verifiers taskset's speed and success rate beside verifiers' own openenv taskset and a bare loop."""
