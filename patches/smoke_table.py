"""The orchestrator smoke run's tables as docs/prime-rl.md shows them, and the check that the page's are the run's.

patches/check runs the smoke (patches/orchestrator_smoke.py, which writes its summary as JSON) and then this, so the
page's numbers cannot go stale silently: on the pinned commits (the run is seeded) a page whose tables differ from the
run's fails the check with the difference; `--write` puts the run's tables into the page instead.

Usage: patches/smoke_table.py SUMMARY.json PAGE.md [--write]
Standard library only: it runs in prime-rl's interpreter and in this repository's tests.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any

BEGIN = "<!-- smoke-tables: patches/check compares these with its smoke run (patches/smoke_table.py --write) -->"
END = "<!-- /smoke-tables -->"


def _share_row(label: str, shares: dict[str, float], tiers: list[str], signal_tiers: list[str]) -> str:
    cells = [f"{shares.get(tier, 0.0):.3f}" for tier in tiers]
    signal = sum(shares.get(tier, 0.0) for tier in signal_tiers)
    return f"| {label} | {' | '.join(cells)} | {signal:.3f} |"


def _windows(summary: dict[str, Any]) -> list[tuple[str, dict[str, float]]]:
    """The draw-share windows of the summary (``draw_share_steps_A_B``), in step order, as ("steps A-B", shares)."""
    found = []
    for key, shares in summary.items():
        if key.startswith("draw_share_steps_"):
            first, last = key.removeprefix("draw_share_steps_").split("_")
            found.append((int(first), f"steps {first}-{last}", shares))
    return [(label, shares) for _, label, shares in sorted(found)]


def render(summary: dict[str, Any]) -> str:
    """The page's two tables for one smoke summary: what happened to the groups drawn, and the draw share per tier."""
    s = summary
    horizon = s["pending_horizon"]
    groups = [
        "| | groups | of which |",
        "|---|---:|---|",
        f"| drawn by the curriculum | {s['groups_drawn']} | |",
        f"| cancelled as stale (never observed) | {s['groups_cancelled_stale']} | {s['lost_groups_at_end']:.0f} lost "
        f"(drawn more than {horizon} draws before the end), {s['pending_groups_at_end']:.0f} still pending; pending at "
        f"most {s['pending_groups_max']:.0f} at any step (horizon {horizon}) |",
        f"| delivered to `on_result` | {s['groups_delivered_to_on_result']} | {s['observed_groups']} observed, "
        f"{s['observed_before_gate']} of them before the gate decided; {s['gate_rejected']} rejected by the "
        "zero-advantage gate |",
    ]
    checkpoints = ", ".join(str(step) for step in s["checkpoint_steps"])
    success, signal = s["tier_success"], s["signal_tiers"]  # the scripted policy's success rate per tier
    tiers = list(success)
    shares = [
        f"Draw share per tier, read from the orchestrator's checkpoints (`progress.pt` at steps {checkpoints}):",
        "",
        f"| tier (success rate of the scripted policy) | {' | '.join(f'{t} ({success[t]})' for t in tiers)} | "
        f"tiers {signal[0]}-{signal[-1]} |",
        "|---|" + "---:|" * (len(tiers) + 1),
        _share_row("uniform draws (expected)", dict.fromkeys(tiers, 1 / len(tiers)), tiers, signal),
        *(_share_row(label, window, tiers, signal) for label, window in _windows(s)),
    ]
    return "\n".join(groups + [""] + shares)


def page_tables(page: str) -> str:
    """The tables between the page's markers; a ValueError naming the markers when it has none."""
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the page has no smoke tables between {BEGIN!r} and {END!r}")
    return page[start + len(BEGIN):end].strip("\n")


def differences(summary: dict[str, Any], page: str) -> list[str]:
    """A unified diff from the page's tables to the run's; empty when they are the same."""
    return list(difflib.unified_diff(page_tables(page).splitlines(), render(summary).splitlines(),
                                     "the page", "this run", lineterm=""))


def write(summary: dict[str, Any], page: str) -> str:
    """The page with the run's tables between its markers."""
    page_tables(page)  # the markers must be there
    before, rest = page.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    return f"{before}{BEGIN}\n{render(summary)}\n{END}{after}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("summary", type=Path, help="the smoke run's summary (orchestrator_smoke.py --summary-out)")
    parser.add_argument("page", type=Path, help="docs/prime-rl.md")
    parser.add_argument("--write", action="store_true", help="put the run's tables into the page")
    args = parser.parse_args(argv)
    summary = json.loads(args.summary.read_text())
    page = args.page.read_text()
    if args.write:
        args.page.write_text(write(summary, page))
        print(f"smoke tables written to {args.page}")
        return 0
    diff = differences(summary, page)
    if not diff:
        print(f"smoke tables: {args.page} shows this run's numbers")
        return 0
    print(f"smoke tables: {args.page} differs from this run (patches/smoke_table.py SUMMARY PAGE --write takes "
          "the run's):", *diff, sep="\n")
    return 1


if __name__ == "__main__":
    sys.exit(main())
