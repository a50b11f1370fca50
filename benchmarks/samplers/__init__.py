"""The samplers' cost: CPU time per `sample` + `update` call, and the size and speed of their saved state."""
