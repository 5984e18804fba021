"""The HTML report: what it shows, that it escapes hostile text, loads nothing, is
deterministic, and stays bounded for very long ledgers."""

from __future__ import annotations

import re
import tracemalloc
from collections.abc import Iterator
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from harness.loop.recorder import call_id
from harness.record.ledger import Event, Ledger, Record
from harness.record.report.model import CHART_POINTS
from harness.record.report.page import render_html
from harness.record.report.safe import esc

KEY = b"h" * 32
GOAL = "g1"
OWNER = "owner@example.com"
LIMITS = {"iterations": 3, "seconds": 600, "cost_usd": 2.0, "turns": 40, "passes": 20}
NOTE = "verified: chain and MACs intact"

# ---- reading the page ---------------------------------------------------------------------

_VOID = {
    "area",
    "base",
    "br",
    "col",
    "embed",
    "hr",
    "img",
    "input",
    "link",
    "meta",
    "source",
    "wbr",
}


class Page(HTMLParser):
    """Start tags with their attributes, and the text inside each element that has an id.

    Also reads Chromium's `--dump-dom` output, where SVG elements come back as open/close
    pairs instead of self-closing tags.
    """

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self._texts: dict[str, list[str]] = {}
        self._stack: list[tuple[str, str | None]] = []
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        self.elements.append((tag, found))
        if tag not in _VOID:
            self._stack.append((tag, found.get("id")))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        tags = [open_tag for open_tag, _ in self._stack]
        if tag in tags:
            del self._stack[len(tags) - 1 - tags[::-1].index(tag) :]

    def handle_data(self, data: str) -> None:
        for _, ident in self._stack:
            if ident:
                self._texts.setdefault(ident, []).append(data)

    def text(self, ident: str) -> str:
        return " ".join(" ".join(self._texts.get(ident, [])).split())

    def with_class(self, name: str, tag: str | None = None) -> list[dict[str, str]]:
        return [
            attrs
            for t, attrs in self.elements
            if name in attrs.get("class", "").split() and (tag is None or t == tag)
        ]

    def by_id(self, ident: str) -> tuple[str, dict[str, str]]:
        return next((t, a) for t, a in self.elements if a.get("id") == ident)


# ---- writing ledgers as the controller does -----------------------------------------------


class Story:
    """Appends events with the data fields the controller writes (harness/loop/controller.py, finish.py)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.ledger = Ledger(folder, GOAL, KEY)
        self.ledger.load()
        self.tick = 0
        self.tree = 0
        self.open_gate: str | None = None

    def emit(self, type: str, step: str | None, iteration: int, data: dict[str, Any]) -> None:
        self.tick += 1
        ts = f"2026-03-04T05:{self.tick // 60:02d}:{self.tick % 60:02d}.000Z"
        self.ledger.append(type, step, iteration, data, ts)

    def records(self) -> Iterator[Record]:
        return Ledger(self.folder, GOAL, KEY).records()

    def html(self) -> str:
        return render_html(self.records(), GOAL, NOTE).decode()

    def approved(
        self, kind: str = "goal.started", by: list[str] | None = None, iteration: int = 0
    ) -> None:
        self.emit(
            kind,
            None,
            iteration,
            {
                "goal_sha256": ("a" if kind == "goal.started" else "b") * 64,
                "owners_sha256": "c" * 64,
                "approved_by": by or [OWNER],
                "steps": ["build", "judge", "ship"],
                "limits": LIMITS,
                "no_progress_passes": 2,
                "control_commit": "d" * 40,
            },
        )

    def started(self, step: str, iteration: int) -> str:
        cid = call_id(GOAL, iteration, step)
        self.emit("step.started", step, iteration, {"call_id": cid, "base": "e" * 40})
        return cid

    def _base(self, cid: str, exit_code: int, duration: float, tail: str) -> dict[str, Any]:
        return {
            "call_id": cid,
            "exit_code": exit_code,
            "timed_out": False,
            "duration_s": duration,
            "output_tail": tail,
        }

    def build(
        self,
        iteration: int,
        summary: str = "did it",
        changed: list[str] | None = None,
        cost: float = 0.25,
        turns: int = 3,
        duration: float = 12.5,
    ) -> None:
        cid = self.started("build", iteration)
        self.tree += 1
        data = self._base(cid, 0, duration, summary + "\n") | {
            "cost_usd": cost,
            "turns": turns,
            "summary": summary,
            "agent_error": None,
            "changed": ["src/app.py"] if changed is None else changed,
            "tree": f"{self.tree:040x}",
        }
        self.emit("step.finished", "build", iteration, data)

    def judge(self, iteration: int, failing: str | None = None) -> None:
        cid = self.started("judge", iteration)
        data = self._base(cid, 1 if failing else 0, 2.0, "FAILED x" if failing else "ok") | {
            "result": "fail" if failing else "pass",
            "failing_test": failing,
            "tree": f"{self.tree:040x}",
        }
        self.emit("step.finished", "judge", iteration, data)

    def gate(self, iteration: int, status: str, reason: str, detail: str) -> None:
        self.open_gate = reason
        data = {"status": status, "reason": reason, "detail": detail, "commit": "f" * 40}
        self.emit("goal.gated", None, iteration, data)

    def decision(self, iteration: int, decision: str, signers: list[str], **binding: Any) -> None:
        """A signed decision as `cross_gate` records it: the gate it crosses and its binding."""
        data = {
            "decision": decision,
            "gate": self.open_gate,
            "signers": signers,
            "commit": "f" * 40,
            "ledger": f"{self.ledger.head.seq}:{self.ledger.head.hash}",
            "signature_sha256": "5" * 64,
        } | binding
        self.open_gate = None
        self.emit("decision.used", None, iteration, data)


@pytest.fixture
def story(tmp_path: Path) -> Story:
    return Story(tmp_path / "events")


def demo_shaped(story: Story) -> Story:
    """Wrong once, right the second time, parked at eyes before ship (like `harness demo`)."""
    story.approved()
    story.build(1, "first try", ["calc.py"], cost=0.5, turns=4)
    story.judge(1, failing="tests/test_calc.py::test_add_negative")
    story.build(2, "repair", ["calc.py", "tests/test_calc.py"], cost=0.25, turns=2)
    story.judge(2)
    story.gate(2, "parked_at_eyes", "ship", "commit " + "f" * 40 + " passed the done gate")
    return story


# ---- what the page shows --------------------------------------------------------------------


def test_header_names_goal_approvers_sha_status_gate_and_verify_note(story: Story) -> None:
    page = Page(demo_shaped(story).html())
    summary = page.text("summary")
    assert f"Goal {GOAL}" in summary
    assert NOTE in summary
    assert page.text("approvers") == OWNER
    assert "a" * 64 in summary
    assert "parked_at_eyes" in summary
    assert "ship commit " + "f" * 40 in summary


def test_timeline_has_one_group_per_iteration_with_stable_classes(story: Story) -> None:
    page = Page(demo_shaped(story).html())
    assert page.by_id("timeline")[0] == "section"
    groups = page.with_class("iteration", "tbody")
    assert [g["data-iteration"] for g in groups] == ["1", "2"]
    assert len(page.with_class("step-build", "tr")) == 2
    assert len(page.with_class("step-judge", "tr")) == 2
    assert all("step" in row["class"].split() for row in page.with_class("step-judge"))
    assert len(page.with_class("event-gate", "tr")) == 1


def test_timeline_shows_build_numbers_diffstat_and_judge_results(story: Story) -> None:
    text = Page(demo_shaped(story).html()).text("timeline")
    assert "build done 12.5 s $0.5000 4 1 file calc.py first try" in text
    assert "judge fail 2.0 s failing: tests/test_calc.py::test_add_negative" in text
    assert "build done 12.5 s $0.2500 2 2 files calc.py tests/test_calc.py repair" in text
    assert "judge pass 2.0 s" in text


def test_budget_chart_draws_each_metric_against_a_dashed_limit(story: Story) -> None:
    html = demo_shaped(story).html()
    page = Page(html)
    assert page.by_id("budget-chart")[0] == "svg"
    for key in ("cost_usd", "seconds", "iterations", "turns"):
        assert page.with_class(f"panel-{key}", "g")
    assert len(page.with_class("limit", "path")) == 4
    assert len(page.with_class("used", "polyline")) == 4
    assert "stroke-dasharray" in html
    budget = page.text("budget")
    assert "Cost (USD): $0.7500 of $2.00 (38%)" in budget
    assert "Iterations: 2 of 3 (67%)" in budget
    assert "used, cumulative" in budget and "builds" in budget


def test_gates_and_decisions_show_reason_evidence_signers_and_binding(story: Story) -> None:
    demo_shaped(story)
    story.decision(2, "ship", ["alice@example.com"], ledger="9:ab")
    cid = story.started("ship", 2)
    done = story._base(cid, 0, 1.0, "shipped\n") | {"result": "pass"}
    story.emit("step.finished", "ship", 2, done)
    story.emit("goal.completed", None, 2, {"commit": "f" * 40, "detail": "shipped"})
    page = Page(story.html())
    gates = page.text("gates")
    evidence = f"commit {'f' * 40} passed the done gate"
    assert f"parked_at_eyes ship {evidence} crossed by decision ship #" in gates
    decisions = page.text("decisions")
    assert f"run (goal started) {OWNER} goal sha256 {'a' * 64} -" in decisions
    binding = f"commit {'f' * 40} ledger 9:ab signature sha256 {'5' * 64}"
    assert f"ship alice@example.com {binding} ship" in decisions
    assert "completed" in page.text("summary")
    assert "ship pass" in page.text("timeline")
    assert [row["class"] for row in page.with_class("decision", "tr")] == [
        "decision decision-run",
        "decision decision-ship",
    ]


def test_budget_gate_extension_and_revision_are_all_on_the_record(story: Story) -> None:
    story.approved()
    story.build(1)
    story.judge(1, failing="t1")
    story.gate(2, "needs_attention", "budget_exhausted", "cost_usd 2.0/2.0")
    limits = LIMITS | {"cost_usd": 5.0}
    signers = ["alice@example.com", "bob@example.com"]
    story.decision(2, "extend-budget cost_usd=5", signers, limits=limits)
    assert "Cost (USD): $0.2500 of $5.00" in Page(story.html()).text("budget")
    story.gate(2, "needs_attention", "goal_changed", "the goal file changed")
    story.approved("goal.revised", by=["carol@example.com"], iteration=2)
    page = Page(story.html())
    decisions = page.text("decisions")
    assert "extend-budget cost_usd=5 alice@example.com bob@example.com" in decisions
    assert "new limits" in decisions and "budget_exhausted" in decisions
    revised = f"run (goal revised) carol@example.com goal sha256 {'b' * 64} goal_changed"
    assert revised in decisions
    gates = page.text("gates")
    assert f"cost_usd 2.0/2.0 at commit {'f' * 40} crossed by decision extend-budget" in gates
    assert "cleared by goal revision" in gates
    assert page.text("approvers") == "carol@example.com"
    # A new goal version brings its own limits: the extension belonged to the old one.
    assert "Cost (USD): $0.2500 of $2.00" in page.text("budget")


def test_owner_rotation_is_a_signed_decision(story: Story) -> None:
    story.approved()
    story.gate(1, "needs_attention", "owners_changed", "the owners file changed")
    rotation = {"owners_sha256": "9" * 64, "owners_commit": "8" * 40, "signers": [OWNER]}
    story.emit("owners.rotated", None, 1, rotation)
    page = Page(story.html())
    assert f"rotate owners {OWNER} owners sha256 {'9' * 64}" in page.text("decisions")
    assert "cleared by owners rotation" in page.text("gates")
    assert "owners owners rotated signed by" in page.text("timeline")


def test_decision_with_missing_keys_still_renders(story: Story) -> None:
    story.approved()
    story.gate(1, "needs_attention", "no_progress", "same failure")
    # Only what the fold itself needs: no signers, no binding.
    story.emit("decision.used", None, 1, {"decision": "unpark no_progress", "gate": "no_progress"})
    decisions = Page(story.html()).text("decisions")
    assert "unpark no_progress none recorded not recorded no_progress" in decisions


def test_cut_off_step_is_marked_and_its_rerun_labelled(story: Story) -> None:
    story.approved()
    cid = story.started("build", 1)
    story.emit("step.cutoff", "build", 1, {"call_id": cid, "changed": ["a.py", "b.py"]})
    story.build(1)
    page = Page(story.html())
    cut = page.with_class("step-cutoff", "tr")
    rerun = page.with_class("step-rerun", "tr")
    assert len(cut) == 1 and len(rerun) == 1 and cut[0] is not rerun[0]
    text = page.text("timeline")
    assert "build cut off" in text and "work in progress kept: 2 changed paths" in text
    assert "build re-run done" in text


def test_step_without_a_finish_is_in_flight(story: Story) -> None:
    story.approved()
    story.started("build", 1)
    assert "build in flight" in Page(story.html()).text("timeline")


def test_cut_off_ship_is_an_unknown_outcome_not_in_flight(story: Story) -> None:
    demo_shaped(story)
    story.decision(2, "ship", [OWNER])
    story.started("ship", 2)
    story.gate(2, "parked_at_eyes", "ship_outcome_unknown", "the ship step was cut off")
    text = Page(story.html()).text("timeline")
    assert "ship outcome unknown" in text and "in flight" not in text


def test_empty_ledger_renders_a_page() -> None:
    page = Page(render_html([], GOAL, NOTE).decode())
    assert "no steps yet" in page.text("timeline")
    assert "no builds yet" in page.text("budget")
    assert page.text("gates") == "Gates seq time iteration status reason evidence outcome none"


# ---- hostile text ---------------------------------------------------------------------------

HOSTILE = '<script>alert("x")</script>\'"&\x1b[31m\x00\x07\r\u202eevil'


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("<b>", "&lt;b&gt;"),
        ('say "hi"', "say &quot;hi&quot;"),
        ("it's", "it&#x27;s"),
        ("a & b", "a &amp; b"),
        ("\x00", "\\x00"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("\r", "\\r"),
        ("\x7f\x85", "\\x7f\\x85"),
        ("\u202etxt.exe", "\\u202etxt.exe"),
        ("\u2066x\u2069", "\\u2066x\\u2069"),
        ("\ud800", "\\ud800"),
        ("line\nnext\ttab", "line\nnext\ttab"),
        (None, ""),
        ({"k": "<v>"}, "{&quot;k&quot;: &quot;&lt;v&gt;&quot;}"),
        (3.5, "3.5"),
    ],
)
def test_esc(raw: object, shown: str) -> None:
    assert esc(raw) == shown


def test_hostile_event_text_is_escaped_everywhere(story: Story) -> None:
    story.approved(by=[HOSTILE])
    story.build(1, summary=HOSTILE, changed=['"><img src=x onerror=alert(1)>'])
    story.judge(1, failing=HOSTILE)
    story.gate(2, "needs_attention", "tamper", HOSTILE)
    story.decision(2, HOSTILE, [HOSTILE], commit=HOSTILE, ledger={"x": HOSTILE})
    html = story.html()
    lowered = html.lower()
    assert "<script" not in lowered and "<img" not in lowered
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f\u202e]", html)
    assert "\\x1b[31m\\x00\\x07\\r\\u202eevil" in html
    page = Page(html)
    assert page.text("approvers").startswith('<script>alert("x")</script>')


def test_page_loads_and_runs_nothing(story: Story) -> None:
    html = demo_shaped(story).html()
    lowered = html.lower()
    for banned in ("http://", "https://", "<script", "src=", "<link", "@import", "url(", "<iframe"):
        assert banned not in lowered
    assert "content=\"default-src 'none'; style-src 'unsafe-inline'\"" in html
    assert html.startswith("<!DOCTYPE html>\n")


def test_same_ledger_gives_the_same_bytes(story: Story) -> None:
    demo_shaped(story)
    first = render_html(story.records(), GOAL, NOTE)
    assert render_html(story.records(), GOAL, NOTE) == first
    assert render_html(list(story.records()), GOAL, NOTE) == first


def _contained(records: Iterator[Record], data: dict[str, str]) -> list[Record]:
    """The same records, each step's start recording `data` (its hash kept: the same page
    but for what `data` changes)."""
    return [
        replace(r, event=replace(r.event, data={**r.event.data, **data}))
        if r.event.type == "step.started"
        else r
        for r in records
    ]


def _html(records: list[Record]) -> str:
    return render_html(records, GOAL, NOTE).decode()


def test_each_step_names_its_containment(story: Story) -> None:
    records = list(demo_shaped(story).records())
    contained = _html(_contained(iter(records), {"sandbox": "bwrap"}))
    bare = _html(_contained(iter(records), {"sandbox": "off"}))
    words = ("contained (bwrap), network shared", "not contained (sandbox: off), network shared")
    # One per step in the timeline, one in the header: nothing else differs.
    assert contained.count(words[0]) == bare.count(words[1]) == 4 + 1
    assert (
        contained.replace(words[0], words[1]).replace(
            'containment contained"', 'containment uncontained"'
        )
        == bare
    )
    assert Page(bare).text("containment") == f"build ×2, judge ×2: {words[1]}"
    assert len(Page(bare).with_class("uncontained", "span")) == 4
    assert len(Page(contained).with_class("uncontained", "span")) == 0


def test_a_record_older_than_the_field_reads_unknown(story: Story) -> None:
    page = Page(demo_shaped(story).html())
    old = "unknown (record older than the field), network shared"
    assert page.text("containment") == f"build ×2, judge ×2: {old}"
    assert page.text("timeline").count(old) == 4


# ---- long ledgers ---------------------------------------------------------------------------


def synthetic(iterations: int) -> Iterator[Record]:
    """A long run straight from memory: writing it through the ledger (HMAC, fsync per line)
    would take minutes, and the renderer reads nothing but the records."""
    seq = 0

    def rec(type: str, step: str | None, it: int, data: dict[str, Any]) -> Record:
        nonlocal seq
        seq += 1
        event = Event(seq, f"t{seq}", type, GOAL, step, it, data, "0" * 64)
        return Record(event, f"{seq:064x}", "000001.jsonl", seq, 0)

    limits = {
        "iterations": iterations + 1,
        "seconds": 1e9,
        "cost_usd": 1e6,
        "turns": 10**9,
        "passes": 10**9,
    }
    yield rec(
        "goal.started",
        None,
        0,
        {
            "goal_sha256": "a" * 64,
            "owners_sha256": "b" * 64,
            "approved_by": [OWNER],
            "steps": ["build", "judge"],
            "limits": limits,
            "no_progress_passes": 10**9,
            "control_commit": "d" * 40,
        },
    )
    for it in range(1, iterations + 1):
        base = {
            "call_id": "c",
            "exit_code": 0,
            "timed_out": False,
            "duration_s": 1.0,
            "output_tail": "x" * 200,
        }
        yield rec("step.started", "build", it, {"call_id": "c", "base": "e" * 40})
        yield rec(
            "step.finished",
            "build",
            it,
            base
            | {
                "cost_usd": 0.01,
                "turns": 1,
                "summary": f"build {it}",
                "changed": ["f.py"],
                "tree": "t",
            },
        )
        yield rec("step.started", "judge", it, {"call_id": "c", "base": "e" * 40})
        yield rec(
            "step.finished",
            "judge",
            it,
            base | {"result": "fail", "failing_test": f"t{it}", "tree": f"{it}"},
        )


def test_long_ledger_shows_first_and_last_iterations_and_folds_the_middle() -> None:
    html = render_html(synthetic(3000), GOAL, NOTE).decode()
    page = Page(html)
    numbers = [int(g["data-iteration"]) for g in page.with_class("iteration", "tbody")]
    assert numbers == list(range(1, 51)) + list(range(2801, 3001))
    assert "2,750 iterations folded here (iterations 51 to 2,800)" in page.text("timeline")
    assert "build 3000" in html and "build 2800" not in html
    for line in re.findall(r'<polyline class="used" points="([^"]*)"', html):
        assert len(line.split()) <= CHART_POINTS + 2  # the origin and the final build
    assert "Iterations: 3,000 of 3,001" in page.text("budget")


def test_memory_does_not_grow_with_the_ledger() -> None:
    peaks = []
    for iterations in (1_000, 6_000):
        tracemalloc.start()
        render_html(synthetic(iterations), GOAL, NOTE)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # Six times the events, about the same memory: only what the page shows is kept.
    assert peaks[1] < peaks[0] * 1.5
