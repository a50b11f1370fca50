"""`run_eval`'s speed: episodes per second beside a bare /ws loop, in-process and through an OpenAI-compatible server."""
