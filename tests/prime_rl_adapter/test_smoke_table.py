"""docs/prime-rl.md's smoke tables are what patches/smoke_table.py renders from a smoke summary, so patches/check can
compare the page with its run: the page's numbers read back and rendered again give the page's text exactly, a run
that differs in any number is a difference, and `--write` puts a run's tables into the page."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "prime-rl.md"
SPEC = importlib.util.spec_from_file_location("smoke_table", ROOT / "patches" / "smoke_table.py")
smoke_table = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(smoke_table)


def page_summary(page: str) -> dict:
    """The smoke summary the page's tables show, read back from their text."""
    tables = smoke_table.page_tables(page)
    number = r"(\d+)"
    drawn = re.search(rf"\| drawn by the curriculum \| {number} \|", tables)
    stale = re.search(rf"\| cancelled as stale \(never observed\) \| {number} \| {number} lost \(drawn more than "
                      rf"{number} draws before the end\), {number} still pending; pending at most {number}", tables)
    delivered = re.search(rf"\| delivered to `on_result` \| {number} \| {number} observed, {number} of them before "
                          rf"the gate decided; {number} rejected", tables)
    checkpoints = re.search(r"`progress.pt` at steps ([\d, ]+)\)", tables).group(1)
    header = re.search(r"\| tier \(success rate of the scripted policy\) \| (.*) \| tiers (\d+)-(\d+) \|", tables)
    tiers = dict(re.findall(r"(\d+) \(([\d.]+)\)", header.group(1)))
    windows = {f"draw_share_steps_{a}_{b}": dict(zip(tiers, map(float, cells.split(" | ")[:len(tiers)])))
               for a, b, cells in re.findall(r"\| steps (\d+)-(\d+) \| (.*) \|", tables)}
    signal = [tier for tier in tiers if int(header.group(2)) <= int(tier) <= int(header.group(3))]
    return {
        "groups_drawn": int(drawn.group(1)), "groups_cancelled_stale": int(stale.group(1)),
        "lost_groups_at_end": float(stale.group(2)), "pending_horizon": int(stale.group(3)),
        "pending_groups_at_end": float(stale.group(4)), "pending_groups_max": float(stale.group(5)),
        "groups_delivered_to_on_result": int(delivered.group(1)), "observed_groups": int(delivered.group(2)),
        "observed_before_gate": int(delivered.group(3)), "gate_rejected": int(delivered.group(4)),
        "checkpoint_steps": [int(step) for step in checkpoints.split(", ")],
        "tier_success": {tier: float(rate) for tier, rate in tiers.items()}, "signal_tiers": signal, **windows,
    }


def test_the_pages_tables_are_the_rendering_of_their_own_numbers() -> None:
    page = PAGE.read_text()
    summary = page_summary(page)
    assert summary["groups_drawn"] == summary["groups_cancelled_stale"] + summary["groups_delivered_to_on_result"]
    assert smoke_table.differences(summary, page) == []


COUNTS = ["groups_drawn", "groups_cancelled_stale", "gate_rejected", "pending_groups_max", "lost_groups_at_end"]


@given(field=st.sampled_from(COUNTS), change=st.integers(1, 50))
def test_a_run_with_another_number_is_a_difference(field: str, change: int) -> None:
    page = PAGE.read_text()
    summary = page_summary(page)
    summary[field] += change
    diff = smoke_table.differences(summary, page)
    assert diff and any(line.startswith("+|") for line in diff) and any(line.startswith("-|") for line in diff)


def test_the_check_fails_on_a_stale_page_and_write_takes_the_runs_tables(tmp_path: Path, capsys) -> None:
    summary = page_summary(PAGE.read_text())
    summary["groups_drawn"] += 1
    summary["groups_delivered_to_on_result"] += 1
    run = tmp_path / "smoke.json"
    run.write_text(json.dumps(summary))
    page = tmp_path / "prime-rl.md"
    page.write_text(PAGE.read_text())
    assert smoke_table.main([str(run), str(page)]) == 1
    assert "differs from this run" in capsys.readouterr().out
    assert smoke_table.main([str(run), str(page), "--write"]) == 0
    assert smoke_table.main([str(run), str(page)]) == 0
    written = page.read_text()
    assert written.replace(smoke_table.page_tables(written), "") == PAGE.read_text().replace(
        smoke_table.page_tables(PAGE.read_text()), "")  # only the tables changed


def test_a_page_without_the_markers_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no smoke tables between"):
        smoke_table.page_tables("# a page\n")
