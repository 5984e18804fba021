"""The reviewer's sections: the objective, the decision a waiting goal needs (what a
signature binds, the command that signs), and per iteration the build's diff with added and
removed lines marked, the judge's and review's output, lessons and their checks.

All of it comes from `record/notes.py`, gathered while the page's records stream by.
"""

from __future__ import annotations

from harness.record.cell import Cell
from harness.record.evidence import binds, diff_command, sign_command
from harness.record.notes import IterationEvidence, IterationNote
from harness.record.report.cells import badge, tone_of
from harness.record.report.model import Gate
from harness.record.report.safe import EMPTY, Html, esc, html, join


def objective_section(evidence: IterationEvidence) -> Html:
    if not evidence.objective:
        return EMPTY
    return html(
        '<section id="objective">\n<h2>Objective</h2>\n'
        '<pre class="text block">{}</pre>\n</section>\n',
        evidence.objective.rstrip(),
    )


def decision_section(evidence: IterationEvidence, cell: Cell, gate: Gate | None = None) -> Html:
    sign = sign_command(cell, evidence.goal_id)
    if sign is None:
        return EMPTY
    change = EMPTY
    if gate is not None and gate.change is not None:
        change = html(
            '<h3>The whole change a signature ships</h3>\n<div id="whole-change">{}</div>\n',
            _diff(gate.change),
        )
    rows = join(
        html('<tr><th scope="row">{}</th><td><code class="wrap">{}</code></td></tr>\n', name, value)
        for name, value in binds(cell)
    )
    return html(
        '<section id="decision">\n<h2>Decision needed</h2>\n'
        "<p>The goal waits at {}. "
        "Review the change with <code>{}</code>; "
        "a signature binds:</p>\n"
        '<table class="facts">\n{}</table>\n{}'
        '<p>Sign with: <code id="sign-command">{}</code></p>\n'
        "<p>From a clone that does not run the goal (a laptop): "
        '<code id="sign-push-command">{} --push origin</code> commits the decision and pushes '
        "it; the runner acts on it at its next <code>harness run --push origin</code>.</p>\n"
        "</section>\n",
        badge(cell.gate or "", tone_of(cell.status)),
        diff_command(evidence.goal_id),
        rows,
        change,
        sign,
        sign,
    )


def changes_section(evidence: IterationEvidence) -> Html:
    if not evidence.iterations:
        return EMPTY
    note = EMPTY
    if evidence.dropped:
        note = html(
            '<p class="muted">The last {} iterations; '
            "<code>harness replay {}</code> shows every event.</p>\n",
            len(evidence.iterations),
            evidence.goal_id,
        )
    body = join(_iteration(item) for item in evidence.iterations.values())
    return html(
        '<section id="changes">\n<h2>Changes and evidence</h2>\n{}{}</section>\n', note, body
    )


def _iteration(note: IterationNote) -> Html:
    return html(
        '<article class="iteration-evidence" data-iteration="{number}">\n'
        "<h3>Iteration {number:,}</h3>\n<ul>{items}</ul>\n{blocks}</article>\n",
        number=note.number,
        items=join(html("<li>{}</li>", item) for item in _items(note)),
        blocks=join(html("{}\n", block) for block in _blocks(note)),
    )


def _items(note: IterationNote) -> list[Html]:
    items = []
    if note.lessons:
        items.append(html("lessons given: {}", ", ".join(note.lessons)))
    if note.build:
        items.append(html("build: {}", note.build))
    items += [html("destructive: <code>{}</code>", hit) for hit in note.destructive]
    for step in note.steps:
        failing = html(" · failing <code>{}</code>", step.failing) if step.failing else EMPTY
        items.append(html("{}: {}{}", step.step, badge(step.result, _tone(step.result)), failing))
    for check in note.checks:
        verdict = "passed" if check.passed else "failed"
        items.append(
            html(
                '<span class="lesson-check">lesson <code>{}</code> check {} exit {}</span>',
                check.name,
                badge(verdict, "pass" if check.passed else "fail"),
                esc(check.exit_code),
            )
        )
    if note.blocked:
        items.append(html("done gate blocked: {}", note.blocked))
    return items


def _blocks(note: IterationNote) -> list[Html]:
    blocks = []
    if note.diff is not None:
        blocks.append(html("<h4>What build {} changed</h4>\n{}", note.number, _diff(note.diff)))
    for step in note.steps:
        if step.output:
            blocks.append(
                html(
                    '<h4>{} output</h4>\n<pre class="text block output">{}</pre>',
                    step.step,
                    step.output,
                )
            )
    for check in note.checks:
        if check.output and not check.passed:
            blocks.append(
                html(
                    '<h4>lesson {} check output</h4>\n<pre class="text block output">{}</pre>',
                    check.name,
                    check.output,
                )
            )
    return blocks


def _tone(result: str) -> str:
    return {"pass": "pass", "fail": "fail", "tamper": "fail", "violation": "fail"}.get(
        result, "neutral"
    )


def _diff(text: str) -> Html:
    """A diff with each line classed: file headers, hunks, added and removed lines."""
    if not text.strip():
        return html('<p class="muted">no change</p>')
    lines = join(
        html('<span class="{}">{}</span>', _line_kind(line), line)
        for line in text.rstrip("\n").split("\n")
    )
    return html('<pre class="diff">{}</pre>', lines)  # each line a block


def _line_kind(line: str) -> str:
    if line.startswith(("diff --git", "+++ ", "--- ", "index ", "new file", "deleted file")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "del"
    if line.startswith("… "):
        return "more"
    return "ctx"
