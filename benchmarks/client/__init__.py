"""The OpenEnv wire client's speed: episodes per second beside a bare websockets loop, Task API and task-list reads."""
