"""Where tasks come from and the checks before a run: a split's task specs and the reset arguments that play each
task (from the server's Task API, or from a task list for a server without one), which split and family field a
consumer uses, and whether the server's reset plays the task it is asked for.

Built on the wire only: the eval, the verifiers taskset, the trainers and the prime-rl adapter read tasks by one set
of rules without the prompt or episode code.
"""
