"""The HTML report of a real demo run, opened in headless Chromium.

Chromium parses the page as a browser would: the DOM it dumps must still hold the timeline,
the chart, the gate and the approval, and its screenshot (test-artifacts/report.png) is the
page as a reader sees it. In CI a missing browser is a failure, never a skip (tests/tools.py).
"""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from harness.commands.demo import DEMO_OWNER, DEMO_SECRET, GOAL_ID, build_repo
from harness.commands.run import run
from harness.record.ledger import Ledger
from harness.record.report.page import render_html
from harness.trust.secret import Secret
from tests.record.test_report import GOAL as STORY_GOAL
from tests.record.test_report import Page, Story
from tests.record.test_report_chart import (
    Chart,
    assert_cost_scale,
    assert_drawn_inside,
    assert_ticks_apart,
    lowered_limit,
)
from tests.tools import need_tool

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def chromium() -> str:
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    if found is not None:
        return found
    need_tool("no chromium binary (apt-get install chromium)")


@pytest.fixture
def demo_report(tmp_path: Path) -> Path:
    """Run the embedded demo to its ship gate and render its ledger as HTML."""
    repo, _ = build_repo(tmp_path / "demo")
    env = {**os.environ, "HARNESS_SECRET": DEMO_SECRET}
    env.pop("HARNESS_SECRET_FILE", None)
    # A step limit far above the demo's five steps: a looping controller fails here, never hangs.
    assert run(repo, [], 50, None, env, out=io.StringIO(), err=io.StringIO()) == 0
    events = repo / ".harness" / "worktrees" / GOAL_ID / "ledger" / GOAL_ID / "events"
    key = Secret(DEMO_SECRET.encode()).goal_key(GOAL_ID)
    records = Ledger(events, GOAL_ID, key).records()
    page = render_html(records, GOAL_ID, "verified: chain and MACs intact")
    path = tmp_path / "report.html"
    path.write_bytes(page)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "report.html").write_bytes(page)
    return path


def browse(chromium: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """One Chromium run with a fresh profile; it must not reach the network."""
    profile.mkdir()
    command = [chromium, *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_demo_report_renders_in_chromium(chromium: str, demo_report: Path, tmp_path: Path) -> None:
    url = demo_report.as_uri()
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    browse(
        chromium, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1280,2000", url
    )
    assert png_size(shot) == (1280, 2000)

    dom = browse(chromium, tmp_path / "profile-dom", "--dump-dom", url).stdout
    page = Page(dom)
    iterations = page.with_class("iteration", "tbody")
    assert [group["data-iteration"] for group in iterations] == ["1", "2"]
    assert page.by_id("budget-chart")[0] == "svg"
    assert len(page.with_class("limit", "path")) == 4
    gates = page.text("gates")
    assert "parked_at_eyes" in gates and " ship " in f" {gates} "
    assert DEMO_OWNER in page.text("decisions")
    assert page.text("approvers") == DEMO_OWNER
    assert "failing: test_calc.CalcTest.test_add_negative" in page.text("timeline")
    assert not [tag for tag, _ in page.elements if tag == "script"]


def test_budget_chart_keeps_every_limit_on_its_scale_in_chromium(
    chromium: str, tmp_path: Path
) -> None:
    """A limit lowered by a goal revision and a spend far above today's limit, as Chromium
    lays them out: every line inside its panel, each limit labelled (issue 16). The
    screenshot is test-artifacts/report-chart.png."""
    story = lowered_limit(Story(tmp_path / "events"), last_cost=30.5)
    page = render_html(story.records(), STORY_GOAL, "verified: chain and MACs intact")
    path = tmp_path / "chart.html"
    path.write_bytes(page)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "report-chart.html").write_bytes(page)
    shot = ARTIFACTS / "report-chart.png"
    shot.unlink(missing_ok=True)
    size = "--window-size=1280,1800"
    browse(chromium, tmp_path / "profile-shot", f"--screenshot={shot}", size, path.as_uri())
    assert png_size(shot) == (1280, 1800)

    dom = browse(chromium, tmp_path / "profile-dom", "--dump-dom", path.as_uri()).stdout
    chart = Chart(dom)
    assert [p.key for p in chart.panels] == ["cost_usd", "seconds", "iterations", "turns"]
    for panel in chart.panels:
        assert_drawn_inside(panel)
        assert_ticks_apart(panel)
    assert_cost_scale(chart.panel("cost_usd"), 2.0, 31.5, earlier=50.0)
