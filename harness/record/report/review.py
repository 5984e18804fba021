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
from harness.record.report.safe import esc


def objective_section(evidence: IterationEvidence) -> str:
    if not evidence.objective:
        return ""
    return (
        '<section id="objective">\n<h2>Objective</h2>\n'
        f'<pre class="text block">{esc(evidence.objective.rstrip())}</pre>\n</section>\n'
    )


def decision_section(evidence: IterationEvidence, cell: Cell) -> str:
    sign = sign_command(cell, evidence.goal_id)
    if sign is None:
        return ""
    rows = "".join(
        f'<tr><th scope="row">{esc(name)}</th><td><code class="wrap">{esc(value)}</code></td></tr>\n'
        for name, value in binds(cell)
    )
    return (
        '<section id="decision">\n<h2>Decision needed</h2>\n'
        f"<p>The goal waits at {badge(cell.gate or '', tone_of(cell.status))}. "
        f"Review the change with <code>{esc(diff_command(evidence.goal_id))}</code>; "
        "a signature binds:</p>\n"
        f'<table class="facts">\n{rows}</table>\n'
        f'<p>Sign with: <code id="sign-command">{esc(sign)}</code></p>\n</section>\n'
    )


def changes_section(evidence: IterationEvidence) -> str:
    if not evidence.iterations:
        return ""
    note = ""
    if evidence.dropped:
        note = (
            f'<p class="muted">The last {len(evidence.iterations)} iterations; '
            f"<code>harness replay {esc(evidence.goal_id)}</code> shows every event.</p>\n"
        )
    body = "".join(_iteration(item) for item in evidence.iterations.values())
    return f'<section id="changes">\n<h2>Changes and evidence</h2>\n{note}{body}</section>\n'


def _iteration(note: IterationNote) -> str:
    items = []
    if note.lessons:
        items.append(f"lessons given: {esc(', '.join(note.lessons))}")
    if note.build:
        items.append(f"build: {esc(note.build)}")
    items += [f"destructive: <code>{esc(hit)}</code>" for hit in note.destructive]
    for step in note.steps:
        failing = f" · failing <code>{esc(step.failing)}</code>" if step.failing else ""
        items.append(f"{esc(step.step)}: {badge(step.result, _tone(step.result))}{failing}")
    for check in note.checks:
        verdict = "passed" if check.passed else "failed"
        items.append(
            f'<span class="lesson-check">lesson <code>{esc(check.name)}</code> check '
            f"{badge(verdict, 'pass' if check.passed else 'fail')} exit {esc(check.exit_code)}</span>"
        )
    if note.blocked:
        items.append(f"done gate blocked: {esc(note.blocked)}")
    listing = "".join(f"<li>{item}</li>" for item in items)
    blocks = []
    if note.diff is not None:
        blocks.append(f"<h4>What build {note.number} changed</h4>\n{_diff(note.diff)}")
    for step in note.steps:
        if step.output:
            blocks.append(
                f"<h4>{esc(step.step)} output</h4>\n"
                f'<pre class="text block output">{esc(step.output)}</pre>'
            )
    for check in note.checks:
        if check.output and not check.passed:
            blocks.append(
                f"<h4>lesson {esc(check.name)} check output</h4>\n"
                f'<pre class="text block output">{esc(check.output)}</pre>'
            )
    return (
        f'<article class="iteration-evidence" data-iteration="{note.number}">\n'
        f"<h3>Iteration {note.number:,}</h3>\n<ul>{listing}</ul>\n"
        + "".join(f"{b}\n" for b in blocks)
        + "</article>\n"
    )


def _tone(result: str) -> str:
    return {"pass": "pass", "fail": "fail", "tamper": "fail", "violation": "fail"}.get(
        result, "neutral"
    )


def _diff(text: str) -> str:
    """A diff with each line classed: file headers, hunks, added and removed lines."""
    if not text.strip():
        return '<p class="muted">no change</p>'
    lines = []
    for line in text.rstrip("\n").split("\n"):
        if line.startswith(("diff --git", "+++ ", "--- ", "index ", "new file", "deleted file")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        elif line.startswith("… "):
            kind = "more"
        else:
            kind = "ctx"
        lines.append(f'<span class="{kind}">{esc(line)}</span>')
    return f'<pre class="diff">{"".join(lines)}</pre>'  # each line a block
