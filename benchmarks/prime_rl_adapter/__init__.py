"""The prime-rl adapter's cost per group (`__next__` + `observe`) beside prime-rl's own samplers."""
