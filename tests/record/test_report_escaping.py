"""The HTML page cannot hold an unescaped string (issue 29): it is made of `Html` alone, which
only `record/report/safe.py` makes from text, and mypy refuses a plain `str` where `Html` is
wanted. A hostile value in every field a human or an agent controls comes out as text."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import typing
from collections.abc import Iterator
from dataclasses import fields, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from harness.record.events import EVENT_DATA, EventType
from harness.record.ledger import Event, Record
from harness.record.report.index import GoalRow, render_index
from harness.record.report.page import render_html
from harness.record.report.safe import Html, esc, href, html, join
from harness.record.visible import block

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "harness" / "record" / "report"
GOAL = "g1"
NOTE = "verified: chain and MACs intact"
LIMITS = {"iterations": 3, "seconds": 600, "cost_usd": 2.0, "turns": 40, "passes": 20}

# Each way out of a text node or an attribute: the characters `visible.block` shows as escapes
# (first, so a field the page cuts short still holds them), a script, the end of the stylesheet
# and of the title, a tag with a handler, a quote that would end an attribute and add one, a
# comment, a `javascript:` URL, an entity, and NEL, which `splitlines` breaks a line at.
HOSTILE = (
    "\x00\x1b[31m\x07\u202e\u2066<script>x()</script></style></title><img src=x onerror=y()>"
    '" onclick="z()" \' <!-- javascript:w() &amp; \x85!'
)
SHOWN = block(HOSTILE[:80])  # what a reader sees, once parsed; the page cuts a commit at 80

# The markup the report writes: its elements and attributes (as the parser lowers them).
TAGS = frozenset(
    [
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "main",
        "header",
        "p",
        "h1",
        "h2",
        "h3",
        "h4",
        "table",
        "caption",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "span",
        "code",
        "section",
        "svg",
        "g",
        "line",
        "text",
        "path",
        "polyline",
        "circle",
        "ul",
        "li",
        "pre",
        "article",
        "br",
        "div",
        "footer",
        "a",
    ]
)
ATTRIBUTES = frozenset(
    [
        "lang",
        "charset",
        "http-equiv",
        "content",
        "name",
        "id",
        "class",
        "scope",
        "colspan",
        "title",
        "style",
        "role",
        "aria-labelledby",
        "viewbox",
        "width",
        "preserveaspectratio",
        "x",
        "y",
        "x1",
        "y1",
        "x2",
        "y2",
        "d",
        "points",
        "cx",
        "cy",
        "r",
        "text-anchor",
        "data-iteration",
        "href",
    ]
)
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class Parsed(HTMLParser):
    """Every tag, attribute and piece of text, as a browser's parser reads them."""

    def __init__(self, source: str) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.ends: list[str] = []
        self.comments: list[str] = []
        self.text: list[str] = []
        self.feed(source)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, attrs))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, attrs))

    def handle_endtag(self, tag: str) -> None:
        self.ends.append(tag)

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)

    def shows(self, text: str) -> bool:
        """Whether `text` is there whole, as text or as an attribute's value."""
        values = [value or "" for _, attrs in self.starts for _, value in attrs]
        return text in "".join(self.text) or any(text in value for value in values)


def assert_inert(page: str) -> Parsed:
    """Nothing in `page` but the markup the report writes: hostile text stayed text."""
    assert not RAW.findall(page)
    parsed = Parsed(page)
    tags = {tag for tag, _ in parsed.starts}
    assert tags <= TAGS, tags - TAGS
    assert set(parsed.ends) <= TAGS, set(parsed.ends) - TAGS
    names = {name for _, attrs in parsed.starts for name, _ in attrs}
    assert names <= ATTRIBUTES, names - ATTRIBUTES
    assert [tag for tag, _ in parsed.starts].count("style") == parsed.ends.count("style") == 1
    assert [tag for tag, _ in parsed.starts].count("title") == parsed.ends.count("title")
    assert not parsed.comments
    for _, attrs in parsed.starts:
        for link in (urlsplit(value or "") for name, value in attrs if name == "href"):
            assert (link.scheme, link.netloc) == ("", ""), link
    assert "&amp;lt;" not in page  # escaped once, not twice
    return parsed


# ---- a record with every event type ---------------------------------------------------


def _event(seq: int, type: str, step: str | None, iteration: int, data: dict[str, Any]) -> Event:
    return Event(
        seq, f"2026-03-04T05:00:{seq:02d}.000Z", type, GOAL, step, iteration, data, "0" * 64
    )


def tour() -> list[Event]:
    """A goal's record through every event type, with the data the controller writes."""
    started = {
        "goal_sha256": "a" * 64,
        "owners_sha256": "b" * 64,
        "approved_by": ["owner@example.com"],
        "steps": ["plan", "build", "judge", "review", "ship"],
        "limits": LIMITS,
        "no_progress_passes": 2,
        "control_commit": "c" * 40,
        "objective": "make the tests pass",
        "command_classes": ["network"],
        "command_detail": "curl in build.run",
        "command_warned": ["config:0"],
        "owner_rules": {"config:0": "hit"},
        "sandbox": "bwrap",
        "stale_after_s": 3600,
        "every_s": 86400,
        "lifetime": {"cost_usd": 10.0},
    }
    lessons = [{"name": "no-sleep", "sha256": "d" * 64}]
    build = {
        "call_id": "g1-1-build",
        "exit_code": 0,
        "timed_out": False,
        "duration_s": 12.5,
        "output_tail": "did it\n",
        "result": "pass",
        "tree": "e" * 40,
        "changed": ["src/app.py"],
        "touched": ["src/app.py"],
        "cost_usd": 0.25,
        "turns": 3,
        "session": "s-1",
        "reported_cost_usd": 0.25,
        "reported_turns": 3,
        "reported_tokens": [10, 20, 30],
        "spend_evidence": "stream",
        "summary": "did it",
        "agent_error": "rate limited once",
        "destructive_classes": ["delete"],
        "destructive_detail": "rm -rf build/",
        "destructive": ["delete: build/"],
        "warned": ["config:0"],
        "owner_rules": {"config:0": "warned"},
        "diff": "diff --git a/src/app.py b/src/app.py\n@@ -1 +1 @@\n-old\n+new\n",
        "secrets": ["src/.env"],
        "signal": "SIGTERM",
        "egress": [
            {"host": "api.example.com", "port": 443, "verdict": "allowed", "count": 2}
            | {"sent": 10, "received": 20, "failed": 1},
            {"host": "evil.example", "port": 443, "verdict": "denied", "count": 1}
            | {"sent": 0, "received": 0, "why": "is not in this step's network allowlist"},
        ],
        "egress_more": {"denied": 3},
    }
    judge = {
        "call_id": "g1-1-judge",
        "exit_code": 1,
        "timed_out": False,
        "duration_s": 2.0,
        "output_tail": "FAILED tests/t.py::t",
        "result": "fail",
        "failing_test": "tests/t.py::t",
        "stdout_tail": "FAILED tests/t.py::t - boom",
        "tree": "e" * 40,
    }
    unavailable = build | {
        "result": "unavailable",
        "unavailable": "503 overloaded",
        "unavailable_try": 1,
        "unavailable_tries": 3,
        "retry_at": "2026-03-04T06:00:00.000Z",
    }
    review = judge | {"call_id": "g1-1-review", "result": "fail"}
    gated = {"status": "needs_attention", "reason": "tamper", "detail": "a.py", "commit": "f" * 40}
    planned: list[tuple[str, str | None, int, dict[str, Any]]] = [
        ("goal.started", None, 0, started),
        (
            "step.started",
            "build",
            1,
            {"call_id": "g1-1-build", "base": "e" * 40}
            | {
                "runner": "host-1",
                "lease_until": "2026-03-04T06:00:00.000Z",
                "lessons": lessons,
                "sandbox": "bwrap",
                "network": "off",
            },
        ),
        ("step.finished", "build", 1, build),
        ("step.started", "judge", 1, {"call_id": "g1-1-judge", "base": "e" * 40}),
        ("step.finished", "judge", 1, judge),
        ("step.started", "review", 1, {"call_id": "g1-1-review", "base": "e" * 40}),
        ("step.finished", "review", 1, review),
        (
            "lesson.checked",
            None,
            1,
            {
                "name": "no-sleep",
                "sha256": "d" * 64,
                "exit_code": 1,
                "passed": False,
                "output_tail": "sleep found",
                "warned": False,
            },
        ),
        (
            "done.blocked",
            None,
            1,
            {
                "missing": ["dist/*.whl"],
                "tree": "e" * 40,
                "detail": "missing",
                "lessons_failed": ["no-sleep"],
                "expect_short": ["dist: 0 of 1"],
            },
        ),
        ("goal.gated", None, 1, gated),
        (
            "decision.used",
            None,
            1,
            {
                "decision": "retry",
                "gate": "tamper",
                "signers": ["owner@example.com"],
                "commit": "f" * 40,
                "ledger": "9:" + "0" * 64,
                "signature_sha256": "5" * 64,
                "limits": LIMITS,
                "restored": ["a.py"],
                "missing": ["b.py"],
            },
        ),
        (
            "owners.rotated",
            None,
            1,
            {"owners_sha256": "b" * 64, "owners_commit": "c" * 40, "signers": ["o@example.com"]},
        ),
        ("goal.revised", None, 1, started | {"goal_sha256": "9" * 64}),
        ("step.started", "build", 2, {"call_id": "g1-2-build", "base": "e" * 40}),
        ("step.interrupted", "build", 2, {"call_id": "g1-2-build", "signal": "SIGINT"}),
        ("step.cutoff", "build", 2, {"call_id": "g1-2-build", "changed": ["src/app.py"]}),
        ("goal.resumed", None, 2, {"runner": "host-2"}),
        ("step.started", "build", 2, {"call_id": "g1-2-build", "base": "e" * 40}),
        ("step.finished", "build", 2, unavailable),
        ("goal.gated", None, 2, gated | {"status": "parked_at_eyes", "reason": "ship"}),
        ("goal.completed", None, 2, {"commit": "f" * 40, "detail": "shipped"}),
        ("run.started", None, 0, {"run": 2, "control_commit": "c" * 40, "due_at": "tomorrow"}),
        ("goal.failed", None, 0, {"detail": "budget", "reason": "budget_exhausted"}),
        ("goal.cancelled", None, 0, {"by": "owner@example.com"}),
    ]
    return [_event(n, *item) for n, item in enumerate(planned, start=1)]


def records(events: list[Event]) -> Iterator[Record]:
    for event in events:
        yield Record(event, f"{event.seq:064x}", "000001.jsonl", event.seq, 0)


def hostile(annotation: Any, value: Any) -> Any:
    """`value`, a field declared as `annotation`, with HOSTILE wherever it holds text."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list:
        return value if args[0] in (int, float) else [hostile(args[0], None)]
    if origin is dict:
        # The fold reads a budget's keys: they stay, and a hostile one is added.
        return {**(value or {}), HOSTILE: hostile(args[1], None)}
    if typing.is_typeddict(annotation):
        return {key: hostile(kind, None) for key, kind in typing.get_type_hints(annotation).items()}
    if annotation in (int, float):
        return 1  # a number is shown only through a number's format
    if origin is typing.Union and all(a in (int, float, type(None)) for a in args):
        return 1
    return (
        HOSTILE  # str, Literal, str | None, bool: a ledger read without its secret holds anything
    )


def variants() -> Iterator[tuple[str, list[Event]]]:
    """The tour once per field of each event type (declared or top-level), HOSTILE there."""
    events = tour()
    for index, event in enumerate(events):
        declared = typing.get_type_hints(EVENT_DATA[typing.cast(EventType, event.type)])
        for key, annotation in declared.items():
            data = {**event.data, key: hostile(annotation, event.data.get(key))}
            name = f"{event.type}.{key}"
            yield name, [*events[:index], replace(event, data=data), *events[index + 1 :]]
        changes = {"ts": replace(event, ts=HOSTILE), "type": replace(event, type=HOSTILE)}
        if event.step is not None:
            changes["step"] = replace(event, step=HOSTILE)
        for field, changed in changes.items():
            yield f"{event.type}:{field}", [*events[:index], changed, *events[index + 1 :]]


# Fields the page shows as they are (not folded into a count or a tone): each one must come
# out whole, as text, so the test cannot pass by dropping what it checks.
MUST_SHOW = {
    "goal.started.approved_by",
    "goal.revised.objective",
    "goal.started.goal_sha256",
    "goal.revised.approved_by",
    "step.started.sandbox",
    "step.finished.summary",
    "step.finished.agent_error",
    "step.finished.changed",
    "step.finished.failing_test",
    "step.finished.diff",
    "step.finished.output_tail",
    "step.finished.destructive",
    "step.finished.unavailable",
    "step.finished.retry_at",
    "step.finished.egress",
    "step.finished.egress_error",
    "lesson.checked.name",
    "lesson.checked.output_tail",
    "done.blocked.lessons_failed",
    "goal.gated.status",
    "goal.gated.reason",
    "goal.gated.detail",
    "goal.gated.commit",
    "decision.used.decision",
    "decision.used.gate",
    "decision.used.signers",
    "decision.used.commit",
    "decision.used.ledger",
    "decision.used.signature_sha256",
    "owners.rotated.signers",
    "owners.rotated.owners_sha256",
    "goal.completed.detail",
    "goal.completed.commit",
    "goal.cancelled.by",
    "goal.failed.detail",
    "step.started:ts",
    "step.started:step",
    "goal.gated:type",
}


def test_a_hostile_value_in_every_field_comes_out_as_text() -> None:
    assert_inert(render_html(records(tour()), GOAL, NOTE).decode())
    shown = set()
    for name, events in variants():
        parsed = assert_inert(render_html(records(events), GOAL, NOTE).decode())
        if parsed.shows(SHOWN):
            shown.add(name)
    assert shown >= MUST_SHOW, sorted(MUST_SHOW - shown)


@pytest.mark.parametrize("where", ["goal", "note"])
def test_a_hostile_goal_id_or_note_comes_out_as_text(where: str) -> None:
    goal, note = (HOSTILE, NOTE) if where == "goal" else (GOAL, HOSTILE)
    page = render_html(records(tour()), goal, note).decode()
    assert assert_inert(page).shows(SHOWN)


_ROW = GoalRow(GOAL, f"{GOAL}.html", "parked_at_eyes", "ship", "t0", "cost $1", "t1", "gated")


@pytest.mark.parametrize("field", [f.name for f in fields(GoalRow)])
def test_a_hostile_value_in_every_index_field_comes_out_as_text(field: str) -> None:
    parsed = assert_inert(render_index([replace(_ROW, **{field: HOSTILE})], NOTE).decode())
    assert parsed.shows(href(HOSTILE) if field == "href" else SHOWN)


def test_a_hostile_note_on_the_index_comes_out_as_text() -> None:
    assert assert_inert(render_index([_ROW], HOSTILE).decode()).shows(SHOWN)


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("g1.html", "g1.html"),
        ("javascript:alert(1).html", "javascript%3Aalert%281%29.html"),
        ("//evil.example/x.html", "%2F%2Fevil.example%2Fx.html"),
        ('"><b>.html', "%22%3E%3Cb%3E.html"),
    ],
)
def test_a_link_is_always_a_file_next_to_the_page(name: str, shown: str) -> None:
    assert href(name) == shown
    row = replace(_ROW, goal_id=name, href=name)
    assert_inert(render_index([row], NOTE).decode())


@pytest.mark.parametrize(
    ("made", "shown"),
    [
        (lambda: esc("<b>&'\"\x00"), "&lt;b&gt;&amp;&#x27;&quot;\\x00"),
        (lambda: esc(Html("<b>")), "<b>"),
        (lambda: html("<p>{}</p>", "<i>"), "<p>&lt;i&gt;</p>"),
        (lambda: html("<p>{}</p>", Html("<i>")), "<p><i></p>"),
        (lambda: html("<p>{x}</p>", x="<i>"), "<p>&lt;i&gt;</p>"),
        (lambda: html("{:,} {:.1f} {}", 1234, 2.25, 7), "1,234 2.2 7"),
        (
            lambda: html("{} {} {}", True, None, {"k": "<v>"}),
            "true  {&quot;k&quot;: &quot;&lt;v&gt;&quot;}",
        ),
        # A plain str mypy refuses (below); at run time it is escaped all the same.
        (lambda: join([Html("<a>"), typing.cast(Html, "<b>")]), "<a>&lt;b&gt;"),
        (lambda: join([Html("<i>"), Html("<i>")], Html("<br>")), "<i><br><i>"),
    ],
)
def test_the_builder_escapes_all_but_html_and_numbers(made: Any, shown: str) -> None:
    value = made()
    assert isinstance(value, Html) and value == shown


# ---- the structure that makes a forgotten escape impossible -----------------------------


def _calls(tree: ast.AST, name: str) -> Iterator[ast.Call]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if called == name:
                yield node


def _literal(call: ast.Call) -> bool:
    first = call.args[0] if call.args else None
    return isinstance(first, ast.Constant) and isinstance(first.value, str)


def _functions_making_html(tree: ast.Module) -> set[str]:
    """The functions of `tree` that make an `Html` from something other than a literal."""
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef)
        and any(not _literal(call) for call in _calls(node, "Html"))
    }


def test_only_safe_makes_html_from_text_and_templates_are_literals() -> None:
    """`Html(x)` and `html(template, ...)` take only a string written in the code, anywhere
    in the harness; in `safe.py`, only `esc`, `html` and `join` wrap what they made."""
    bad = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(ROOT)
        if path == REPORT / "safe.py":
            assert _functions_making_html(tree) == {"esc", "html", "join"}
            continue
        bad += [f"{where}:{c.lineno} Html" for c in _calls(tree, "Html") if not _literal(c)]
        bad += [f"{where}:{c.lineno} html" for c in _calls(tree, "html") if not _literal(c)]
        bad += [
            f"{where}:{c.lineno} cast" for c in _calls(tree, "cast") if "Html" in ast.unparse(c)
        ]
    assert not bad


def test_the_report_escapes_through_safe_alone() -> None:
    """No other module of the page imports an escaper or silences the type checker."""
    for path in sorted(REPORT.glob("*.py")):
        text = path.read_text()
        tree = ast.parse(text)
        imported = {
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        allowed = {"html"} if path.name == "safe.py" else set()
        assert imported & {"html", "markupsafe", "jinja2"} <= allowed, path.name
        assert "type: ignore" not in text, path.name


BAD_USE = """
from harness.record.report.safe import Html, html, join, page_bytes


def cell(name: str) -> Html:
    return f"<td>{name}</td>"


def row(name: str) -> Html:
    return html("<tr>{}</tr>", name) + "<td>raw</td>"


page_bytes(["<b>raw</b>"])
join([html("<i>{}</i>", "x"), "<i>raw</i>"])
fine: Html = join([html("<td>{}</td>", "<x>"), cell("y")])
"""


def test_mypy_refuses_a_plain_str_where_html_is_wanted(tmp_path: Path) -> None:
    source = tmp_path / "bad_use.py"
    source.write_text(BAD_USE)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--no-error-summary",
            str(source),
        ],
        cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    found = [
        re.sub(r"^.*bad_use\.py:(\d+): error: ", r"\1: ", line) for line in proc.stdout.splitlines()
    ]
    assert found == [
        '6: Incompatible return value type (got "str", expected "Html")  [return-value]',
        '10: Incompatible return value type (got "str", expected "Html")  [return-value]',
        '13: List item 0 has incompatible type "str"; expected "Html"  [list-item]',
        '14: List item 1 has incompatible type "str"; expected "Html"  [list-item]',
    ], proc.stdout + proc.stderr
