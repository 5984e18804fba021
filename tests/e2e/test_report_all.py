"""`harness report --all --out DIR`: an index of every goal and each goal's report, a static
site that renders in Chromium without a network request."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.e2e.test_browser import ARTIFACTS, browse, chromium, png_size
from tests.managed import ManagedFactory, ManagedRepo, base_goal, git
from tests.record.test_report import Page

__all__ = ["chromium"]  # the fixture, used by name

IDS = [f"g{n:02d}" for n in range(1, 11)]


def _ten_goals(managed: ManagedFactory) -> ManagedRepo:
    """Ten goals: the even ones have a ship step and park at eyes, the odd ones complete."""
    goals = {
        goal_id: base_goal(goal_id) | ({"ship": {"run": ["true"]}} if n % 2 == 0 else {})
        for n, goal_id in enumerate(IDS, 1)
    }
    files = {f"goals/{i}.yaml": yaml.safe_dump(g, sort_keys=False) for i, g in goals.items()}
    repo = managed(goal=goals["g01"], mode="fix-on-1", files=files)
    for goal_id in IDS[1:]:
        repo.harness("approve", goal_id, "--key", str(repo.key.private), check=0)
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "approve ten goals")
    repo.harness("run", check=0)
    return repo


def test_report_all_writes_an_index_and_every_report(
    managed: ManagedFactory, chromium: str, tmp_path: Path
) -> None:
    repo = _ten_goals(managed)
    site = tmp_path / "site"
    out = repo.harness("report", "--all", "--out", str(site), check=0).stdout
    assert out == f"wrote {site / 'index.html'}: 10 goal(s)\n"
    assert sorted(p.name for p in site.iterdir()) == sorted(
        ["index.html", *(f"{i}.html" for i in IDS)]
    )
    for goal_id in IDS:  # each page is the goal's own report, byte for byte
        replay = repo.harness("replay", goal_id, "--format", "html", check=0).stdout
        assert (site / f"{goal_id}.html").read_text() == replay
    again = tmp_path / "again"
    repo.harness("report", "--all", "--out", str(again), check=0)
    assert (again / "index.html").read_bytes() == (site / "index.html").read_bytes()
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "report-index.html").write_bytes((site / "index.html").read_bytes())

    netlog = tmp_path / "net.json"
    shot = ARTIFACTS / "report-index.png"
    shot.unlink(missing_ok=True)
    index = (site / "index.html").as_uri()
    browse(
        chromium,
        tmp_path / "p1",
        f"--screenshot={shot}",
        "--window-size=1280,900",
        f"--log-net-log={netlog}",
        index,
    )
    assert png_size(shot) == (1280, 900)
    assert _page_requests(netlog) == []
    # The check sees a page's own request (a control page that makes one, with no CSP).
    control = tmp_path / "control.html"
    control.write_text('<html><body><img src="http://example.invalid/x.png"></body></html>')
    control_log = tmp_path / "control-net.json"
    browse(
        chromium, tmp_path / "p0", f"--log-net-log={control_log}", "--dump-dom", control.as_uri()
    )
    assert _page_requests(control_log) == ["http://example.invalid/x.png"]

    page = Page(browse(chromium, tmp_path / "p2", "--dump-dom", index).stdout)
    links = [a["href"] for tag, a in page.elements if tag == "a"]
    assert links == [f"{i}.html" for i in IDS]
    rows = {i: page.text(f"goal-{i}") for i in IDS}
    assert all("completed" in rows[i] for i in IDS[::2])
    assert all(
        "parked_at_eyes ship" in rows[i] and "cost $0.2500 of $20.00" in rows[i] for i in IDS[1::2]
    )
    for goal_id in ("g01", "g10"):  # a linked report renders too, on its own
        linked = (site / f"{goal_id}.html").as_uri()
        dom = browse(chromium, tmp_path / f"p-{goal_id}", "--dump-dom", linked).stdout
        assert f"Goal {goal_id}" in " ".join(Page(dom).text("summary").split())


def _page_requests(netlog: Path) -> list[str]:
    """URLs a page asked for: Chromium's own traffic (update checks, the clock) has no
    origin as its initiator; a page's request names the page's origin (`null` for a file)."""
    events = json.loads(netlog.read_text())["events"]
    found = {
        e["params"]["url"]
        for e in events
        if "url" in e.get("params", {})
        and e["params"].get("initiator", "not an origin") != "not an origin"
    }
    return sorted(found)


def test_report_needs_out_and_names_a_broken_ledger(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    repo = managed(mode="fix-on-1")
    repo.harness("run", check=0)
    missing = repo.harness("report", "--all", check=2)
    assert (
        missing.stderr == "harness: --out: missing (expected the folder to write the site into)\n"
    )
    # One forged byte in the ledger: that goal's row says why, the rest is written, exit 3.
    events = sorted((repo.ledger_dir / "events").iterdir())[0]
    lines = events.read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    first["ts"] = "2000-01-01T00:00:00.000Z"
    events.write_text(
        json.dumps(first, separators=(",", ":"), sort_keys=True) + "\n" + "".join(lines[1:])
    )
    proc = repo.harness("report", "--all", "--out", str(tmp_path / "site"), check=3)
    assert proc.stdout.splitlines()[1].startswith("FAIL g1: ")
    assert "unreadable" in (tmp_path / "site" / "index.html").read_text()
    assert not (tmp_path / "site" / "g1.html").exists()
