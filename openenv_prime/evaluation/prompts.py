"""The default system message: short, and asking for the bare answer that exact-match rewards need."""

DEFAULT_SYSTEM_PROMPT = "Solve the task. Reply with only the final answer, nothing else."
