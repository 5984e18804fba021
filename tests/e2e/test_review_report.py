"""The moment of review: report.md and the HTML report of a two-iteration goal show what a
reviewer needs (objective, both diffs, the judge's failing output, the lesson and its
check, what a signature binds and the command to sign), deterministically, in Chromium."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

from tests.e2e.test_browser import ARTIFACTS, browse, chromium, png_size
from tests.managed import ManagedFactory, ManagedRepo, base_goal
from tests.record.test_report import Page

__all__ = ["chromium"]  # the fixture, used by name

LESSON = """version: 1
when:
  keywords: [value]
text: |
  Also write NOTES.txt explaining the value.
check:
  run: [test, -f, NOTES.txt]
"""
AGENT = r"""
import os
from pathlib import Path
it = int(os.environ["HARNESS_ITERATION"])
Path("value.txt").write_text("right\n" if it >= 2 else "wrong\n")
if it >= 2 and "NOTES.txt" in open(os.environ["HARNESS_PROMPT_FILE"]).read():
    Path("NOTES.txt").write_text("value is right\n")
"""


def _parked(managed: ManagedFactory) -> ManagedRepo:
    goal = base_goal() | {
        "build": {"run": [sys.executable, "review_agent.py"]},
        "ship": {"run": ["sh", "-c", "true"]},
    }
    repo = managed(goal=goal, files={"lessons/notes.yaml": LESSON, "review_agent.py": AGENT})
    repo.harness("run", check=0)
    assert (repo.status()["gate"], repo.status()["iteration"]) == ("ship", 2)
    return repo


def test_report_md_shows_what_a_reviewer_needs(managed: ManagedFactory) -> None:
    repo = _parked(managed)
    report = (repo.ledger_dir / "report.md").read_text()
    assert report == repo.harness("replay", "g1", "--format", "md", check=0).stdout
    assert "## Objective\n\n```text\nMake value.txt say right.\n```" in report
    first, second = report.split("### Iteration 1")[1].split("### Iteration 2")
    assert "```diff\n" in first and "+wrong" in first and "new file mode" in first
    assert "-wrong\n+right" in second and "+value is right" in second
    assert "FAILED tests/test_value.py::test_value_is_right - AssertionError: value is 'wrong'" in (
        first
    )
    assert "- lessons given: notes" in first
    assert "- lesson `notes` check passed (exit 0)" in second
    assert "harness ship g1 --key <owner key>" in report
    # What it says a signature binds is what `harness ship` signs (without the secret: only signs).
    unsigned = {k: v for k, v in repo.env.items() if k != "HARNESS_SECRET"}
    repo.harness("ship", "g1", "--key", str(repo.key.private), env=unsigned, check=0)
    statement = (repo.root / "goals" / "g1.approval").read_text().split("\n\n")[-1]
    fields = dict(line.split(" ", 1) for line in statement.splitlines() if " " in line)
    assert f"- commit: `{fields['commit']}`" in report
    assert f"- ledger head: `{fields['ledger']}`" in report
    assert f"- goal sha256: `{fields['sha256']}`" in report


def test_html_report_shows_it_the_same_twice_and_in_chromium(
    managed: ManagedFactory, chromium: str, tmp_path: Path
) -> None:
    repo = _parked(managed)
    html = repo.harness("replay", "g1", "--format", "html", check=0).stdout
    assert html == repo.harness("replay", "g1", "--format", "html", check=0).stdout
    path = tmp_path / "review.html"
    path.write_text(html)
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "review-report.html").write_text(html)
    shot = ARTIFACTS / "review-report.png"
    shot.unlink(missing_ok=True)
    browse(
        chromium, tmp_path / "p1", f"--screenshot={shot}", "--window-size=1280,2400", path.as_uri()
    )
    assert png_size(shot) == (1280, 2400)

    dom = browse(chromium, tmp_path / "p2", "--dump-dom", path.as_uri()).stdout
    page = Page(dom)
    assert "Make value.txt say right." in page.text("objective")
    assert page.text("sign-command") == "harness ship g1 --key <owner key>"
    assert page.text("sign-push-command") == "harness ship g1 --key <owner key> --push origin"
    changes = page.text("changes")
    assert "value is 'wrong'" in changes and "lesson notes check passed" in changes
    # Added and removed lines are marked, as the browser parsed them.
    added = re.findall(r'<span class="add">([^<]*)</span>', dom)
    removed = re.findall(r'<span class="del">([^<]*)</span>', dom)
    assert "+wrong" in added and "+right" in added and removed == ["-wrong"]
    assert "lesson notes check passed" in page.text("timeline")
    assert not [tag for tag, _ in page.elements if tag == "script"]


def test_the_decision_block_shows_the_whole_change_a_signature_ships(
    managed: ManagedFactory,
) -> None:
    """Issue 30 item 13: the cumulative change (both builds), not only each build's own;
    it is what `harness diff` prints, line for line."""
    repo = _parked(managed)
    page = repo.harness("replay", "g1", "--format", "html", check=0).stdout
    block = page[
        page.index('<section id="decision">') : page.index(
            "</section>", page.index('<section id="decision">')
        )
    ]
    assert 'id="whole-change"' in block and 'id="sign-push-command"' in block
    whole = repo.harness("diff", "g1", check=0).stdout
    assert "+right" in whole and "NOTES.txt" in whole
    shown = [html.unescape(s) for s in re.findall(r'<span class="[a-z]*">([^<]*)</span>', block)]
    assert shown == whole.rstrip("\n").split("\n")
