"""No test asserts how fast something ran, and none relies on a sleep to order events (docs/architecture.md#tests).

A time threshold passes on a quiet machine and fails on a loaded one, so it rejects correct changes; speed is
measured by the scripts in benchmarks/, which print tables. This scan of every file under tests/ finds:
- a comparison whose operand comes from a clock (``time.monotonic() - started < 20``, ``_run(main()) < 20``
  where ``main`` returns an elapsed time), followed through names, attributes, calls and returns in a module;
- ``perf_counter`` / ``process_time`` / ``thread_time`` anywhere, strings included (they only measure durations);
- ``pytest.mark.timeout`` (a per-test speed limit; the suite-wide timeout in pyproject.toml is the hang guard),
  and a hypothesis ``settings`` with a deadline or with health checks that put ``too_slow`` back on;
- a ``sleep`` of more than 0 s, unless its line says ``# sleep-is-work: WHY`` (a modelled slow server or job,
  never a wait for something else to happen: wait for the cause with ``tests/support/waiting.py``).
``tests/support/waiting.py`` is the one file that compares clock readings: its hang guard means stuck, not slow.
(This file names the clocks it looks for, so it does not scan itself; its last tests check the scan.)
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

TESTS = Path(__file__).resolve().parent
WAITING = TESTS / "support" / "waiting.py"
CLOCKS = {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time",
          "process_time_ns", "thread_time", "thread_time_ns", "getrusage", "times", "now", "utcnow"}
CLOCK_MODULES = {"time", "resource", "os", "datetime", "loop"}  # loop: asyncio's loop.time()
DURATION_ONLY = ("perf_counter", "process_time", "thread_time")
SLEEPS = {"time.sleep", "asyncio.sleep", "anyio.sleep", "trio.sleep"}
WORK_MARK = "# sleep-is-work:"


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


class _Module:
    """Which names, attributes and functions of one module hold or return a clock reading."""

    def __init__(self, tree: ast.Module):
        self.aliases: dict[str, str] = {}  # local name -> "module.function" for `from time import monotonic as m`
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in {"time", "asyncio", "resource", "os", "datetime"}:
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        self.timed_functions: set[str] = set()
        self.timed_attributes: set[str] = set()  # "self.started": set in one method, compared in another

    def resolve(self, func: ast.AST) -> str | None:
        name = _dotted(func)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        return f"{self.aliases[head]}.{rest}".rstrip(".") if head in self.aliases else name

    def is_clock(self, call: ast.Call) -> bool:
        name = self.resolve(call.func)
        if name is None:
            return isinstance(call.func, ast.Attribute) and call.func.attr == "time" and not call.args
        parts = name.split(".")
        return len(parts) >= 2 and parts[-1] in CLOCKS and (parts[-2] in CLOCK_MODULES or parts[-2] == "datetime")


class _Scope(ast.NodeVisitor):
    """One function (or the module): follows clock readings through assignments, finds comparisons of them."""

    def __init__(self, module: _Module, found: list[int], outer: _Scope | None = None):
        self.module, self.found, self.outer = module, found, outer
        self.timed = set(outer.timed) if outer else set()  # names holding a clock reading
        self.timed_calls = set(outer.timed_calls) if outer else set()  # nested functions returning one
        self.returns_time = False

    def is_time(self, expr: ast.AST | None) -> bool:
        for node in ast.walk(expr) if expr is not None else ():
            if isinstance(node, ast.Call) and (self.module.is_clock(node)
                                               or _dotted(node.func) in self.module.timed_functions | self.timed_calls):
                return True
            if isinstance(node, (ast.Name, ast.Attribute)) and _dotted(node) in self.timed | self.module.timed_attributes:
                return True
        return False

    def _mark(self, target: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._mark(element)
        elif isinstance(target, ast.Starred):
            self._mark(target.value)
        elif isinstance(target, ast.Attribute) and (name := _dotted(target)) is not None:
            self.module.timed_attributes.add(name)
        elif isinstance(target, ast.Name):
            self.timed.add(target.id)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for default in node.args.defaults + node.args.kw_defaults:
            if default is not None:
                self.visit(default)
        inner = _Scope(self.module, self.found, outer=self)
        for statement in node.body:
            inner.visit(statement)
        if inner.returns_time:  # a module-level function is known everywhere (to a fixed point), a nested one here
            (self.timed_calls if self.outer else self.module.timed_functions).add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        if self.is_time(node.value):
            for target in node.targets:
                self._mark(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        if self.is_time(node.value):
            self._mark(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.generic_visit(node)
        if self.is_time(node.value):
            self._mark(node.target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.generic_visit(node)
        if self.is_time(node.value):
            self._mark(node.target)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.generic_visit(node)  # a lambda returning a clock reading taints the name it is assigned to (visit_Assign)

    def visit_Return(self, node: ast.Return) -> None:
        self.generic_visit(node)
        self.returns_time |= self.is_time(node.value)

    def visit_Compare(self, node: ast.Compare) -> None:
        self.generic_visit(node)
        if any(self.is_time(operand) for operand in (node.left, *node.comparators)):
            self.found.append(node.lineno)


def clock_comparisons(source: str) -> list[int]:
    """Line numbers of comparisons against a clock reading (to a fixed point over the module's functions)."""
    tree = ast.parse(source)
    module = _Module(tree)
    while True:
        known = (set(module.timed_functions), set(module.timed_attributes))
        found: list[int] = []
        scope = _Scope(module, found)
        for statement in tree.body:
            scope.visit(statement)
        if (module.timed_functions, module.timed_attributes) == known:
            return sorted(set(found))


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def other_time_limits(source: str) -> list[tuple[int, str]]:
    """(line, what) for every duration-only clock, per-test timeout, hypothesis time limit and unmarked sleep."""
    tree = ast.parse(source)
    module = _Module(tree)
    lines = source.splitlines()
    found = [(number, f"{word} measures a duration") for number, line in enumerate(lines, 1)
             for word in DURATION_ONLY if word in line]
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            if isinstance(node, ast.Attribute) and _dotted(node) in {"pytest.mark.timeout", "mark.timeout"}:
                found.append((node.lineno, "pytest.mark.timeout is a per-test speed limit"))
            continue
        name = module.resolve(node.func) or ""
        if name.split(".")[-1] == "settings":
            deadline = _keyword(node, "deadline")
            if deadline is not None and not (isinstance(deadline, ast.Constant) and deadline.value is None):
                found.append((node.lineno, "a hypothesis deadline"))
            checks = _keyword(node, "suppress_health_check")
            if checks is not None and "too_slow" not in ast.unparse(checks):
                found.append((node.lineno, "suppress_health_check without HealthCheck.too_slow turns the speed check back on"))
        if name in SLEEPS:
            delay = node.args[0] if node.args else _keyword(node, "seconds") or _keyword(node, "delay")
            if not (isinstance(delay, ast.Constant) and delay.value == 0) and WORK_MARK not in lines[node.lineno - 1]:
                found.append((node.lineno, f"{name} waits for time to pass (wait for the cause, or mark it `{WORK_MARK} WHY`)"))
    return sorted(found)


def scanned_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if p not in (WAITING, Path(__file__).resolve()))


@pytest.mark.parametrize("path", scanned_files(), ids=lambda p: p.relative_to(TESTS).as_posix())
def test_no_time_threshold(path):
    source = path.read_text()
    where = f"tests/{path.relative_to(TESTS).as_posix()}"
    assert clock_comparisons(source) == [], f"{where}: comparisons against a clock reading on these lines"
    assert other_time_limits(source) == [], f"{where}: time limits"


def test_hypothesis_runs_without_time_limits():
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check


FLAGGED = {
    "a deadline loop": """
        import time
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            pass
    """,
    "an elapsed time through a helper and a returned value": """
        from time import monotonic as now
        def _run(coro):
            return coro
        def test():
            def main():
                started = now()
                work()
                waited = now() - started
                return waited
            assert _run(main()) < 20
    """,
    "a module-level function used before its definition": """
        def test():
            assert took() < 1
        def took():
            import time
            return time.process_time()
    """,
    "an attribute": """
        import time
        class T:
            def run(self):
                t0 = time.time()
                self.elapsed = time.time() - t0
            def check(self):
                assert self.elapsed <= 1.0
    """,
    "loop.time": """
        import asyncio
        async def f():
            loop = asyncio.get_running_loop()
            end = loop.time() + 5
            assert loop.time() < end
    """,
}
NOT_FLAGGED = """
    import asyncio, time
    payload = {"created": int(time.time())}
    started = []
    def test(log):
        assert len(started) == len(log) - 1
    def test_a():
        def main():
            return time.monotonic()
        main()
    def test_b():
        def main():
            return 3
        assert main() == 3  # another test's main
    async def tick():
        await asyncio.sleep(0)
    def slow_server(delay):
        time.sleep(delay)  # sleep-is-work: the modelled server takes this long to answer
"""


@pytest.mark.parametrize("source", FLAGGED.values(), ids=FLAGGED.keys())
def test_the_scan_finds_clock_comparisons(source):
    assert clock_comparisons(textwrap.dedent(source))


def test_the_scan_finds_other_time_limits():
    source = textwrap.dedent("""
        import time, pytest
        from hypothesis import HealthCheck, settings
        def measure():
            return time.perf_counter()
        @pytest.mark.timeout(5)
        @settings(deadline=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
        def test():
            time.sleep(0.5)
    """)
    assert [line for line, _ in other_time_limits(source)] == [5, 6, 7, 7, 9]


def test_the_scan_leaves_timestamps_yields_and_marked_work_alone():
    source = textwrap.dedent(NOT_FLAGGED)
    assert clock_comparisons(source) == [] and other_time_limits(source) == []
