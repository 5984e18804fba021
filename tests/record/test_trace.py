"""The record as spans (harness/record/trace.py): a trace per run, a span per step, ids that
are the ledger lines' hashes, and nothing an agent wrote at length."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from harness.commands.demo import DEMO_SECRET, GOAL_ID
from harness.record.ledger import Ledger, LedgerBroken
from harness.record.otlp import otlp_json
from harness.record.trace import MAX_SPAN_EVENTS, Span, Tracer, nanos, spans
from harness.trust.secret import Secret

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "ledger" / GOAL_ID / "events"
KEY = b"k" * 32
T = "2030-01-01T00:00:0{}.000Z"
Row = tuple[str, str | None, int, dict[str, Any]]  # an event to append: type, step, iter, data


def _example() -> list[Span]:
    key = Secret(DEMO_SECRET.encode()).goal_key(GOAL_ID)
    return list(spans(Ledger(EXAMPLE, GOAL_ID, key).records(), GOAL_ID))


def _line_hashes(folder: Path) -> list[str]:
    lines = (folder / "000001.jsonl").read_bytes().splitlines(keepends=True)
    return [hashlib.sha256(line).hexdigest() for line in lines]


def _attributes(span: Span) -> dict[str, Any]:
    return dict(span.attributes)


def test_the_example_run_is_a_trace_of_its_four_steps() -> None:
    found = _example()
    hashes = _line_hashes(EXAMPLE)
    # Lines 2, 4, 6, 8 are the step.started of build 1, judge 1, build 2, judge 2.
    assert [s.span_id for s in found] == [hashes[i][:16] for i in (1, 3, 5, 7)]
    assert {s.trace_id for s in found} == {hashes[0][:32]}  # the run's first line
    assert [s.name for s in found] == [f"invoke_agent {GOAL_ID}", "judge"] * 2
    assert [s.error for s in found] == [None, "result fail", None, None]
    assert _attributes(found[1])["error.type"] == "fail"
    assert _attributes(found[1])["harness.failing_test"] == "test_calc.CalcTest.test_add_negative"
    build = _attributes(found[0])
    assert build["gen_ai.operation.name"] == "invoke_agent"
    assert build["gen_ai.agent.name"] == GOAL_ID
    assert (build["harness.iteration"], build["harness.cost_usd"], build["harness.turns"]) == (
        1,
        0.0,
        1,
    )
    # From step.started's ts to step.finished's, to the nanosecond.
    assert (found[0].start_ns, found[0].end_ns) == (1795994989162000000, 1795994989364000000)
    # goal.started led to the first build; the ship gate after the last step is in no span.
    assert [e.name for e in found[0].events] == ["goal.started"]
    assert all(e.name != "goal.gated" for s in found for e in s.events)


def test_the_example_trace_holds_no_output_an_agent_wrote() -> None:
    document = otlp_json(_example(), GOAL_ID).decode()
    for written in ("first try: add magnitudes", "AssertionError", "Traceback"):
        assert written not in document


def _write(folder: Path, events: list[Row]) -> Ledger:
    ledger = Ledger(folder, "g1", KEY)
    ledger.load()
    for i, (kind, step, iteration, data) in enumerate(events):
        ledger.append(kind, step, iteration, data, T.format(i))
    return Ledger(folder, "g1", KEY)


START = {"goal_sha256": "a" * 64, "approved_by": ["o@x"], "steps": ["build", "judge"]}


def _step(step: str, iteration: int, **finished: Any) -> list[Row]:
    call = f"{step}-{iteration}"
    data = {"call_id": call, "duration_s": 0.5, "exit_code": 0, "timed_out": False} | finished
    return [
        ("step.started", step, iteration, {"call_id": call, "base": "b" * 40}),
        ("step.finished", step, iteration, data),
    ]


RUN: list[Row] = [
    ("goal.started", None, 0, START),
    *_step("build", 1),
    *_step("judge", 1, result="pass"),
]


def test_a_changed_line_changes_the_ids_from_it_on(tmp_path: Path) -> None:
    base = list(spans(_write(tmp_path / "a", RUN).records(), "g1"))
    edited_judge = [
        *RUN[:3],
        ("step.started", "judge", 1, {"call_id": "judge-1", "base": "c" * 40}),
        RUN[4],
    ]
    later = list(spans(_write(tmp_path / "b", edited_judge).records(), "g1"))
    assert later[0] == base[0]  # the lines before the edit are the same lines
    assert later[1].span_id != base[1].span_id
    edited_start = [("goal.started", None, 0, START | {"steps": ["build"]}), *RUN[1:]]
    first = list(spans(_write(tmp_path / "c", edited_start).records(), "g1"))
    # The chain carries the edit into every later line's hash: every id changes.
    assert {s.trace_id for s in first}.isdisjoint({s.trace_id for s in base})
    assert {s.span_id for s in first}.isdisjoint({s.span_id for s in base})


def test_a_step_cut_off_ends_at_the_next_event_and_its_retry_is_a_span(tmp_path: Path) -> None:
    events: list[Row] = [
        ("goal.started", None, 0, START),
        ("step.started", "build", 1, {"call_id": "build-1", "base": "b" * 40}),
        ("goal.resumed", None, 1, {"runner": "r"}),
        ("step.cutoff", "build", 1, {"call_id": "build-1", "changed": ["a.py"]}),
        *_step("build", 1),
    ]
    cut, retry = spans(_write(tmp_path, events).records(), "g1")
    assert (cut.error, _attributes(cut)["error.type"]) == (
        "cut off: goal.resumed came next",
        "cut_off",
    )
    assert (cut.start_ns, cut.end_ns) == (_ns(1), _ns(2))
    assert retry.error is None and retry.span_id != cut.span_id
    assert [e.name for e in retry.events] == ["goal.resumed", "step.cutoff"]
    assert dict(retry.events[1].attributes)["harness.changed_files"] == 1


def test_a_tracer_that_skipped_a_loaded_ledger_makes_the_same_later_spans(
    tmp_path: Path,
) -> None:
    """Live export's tracer skips the ledger as loaded, then is fed what the run appends:
    wherever that split falls, it makes exactly the spans `harness trace` makes that end
    after it (a cut-off step included)."""
    events: list[Row] = [
        ("goal.started", None, 0, START),
        ("step.started", "build", 1, {"call_id": "build-1", "base": "b" * 40}),
        ("goal.resumed", None, 1, {"runner": "r"}),
        ("step.cutoff", "build", 1, {"call_id": "build-1", "changed": []}),
        *_step("build", 1),
        (
            "goal.gated",
            None,
            1,
            {"status": "parked_at_eyes", "reason": "ship", "detail": None, "commit": "c"},
        ),
        *_step("ship", 1),
    ]
    records = list(_write(tmp_path, events).records())
    whole = list(spans(records, "g1"))
    for split in range(len(records) + 1):
        tracer = Tracer("g1")
        for record in records[:split]:
            tracer.skip(record)
        later = [span for record in records[split:] for span in tracer.add(record)]
        assert later == [s for s in whole if _attributes(s)["harness.ledger.ended_seq"] > split]
    assert _attributes(whole[-1])["harness.gate"] == "ship"


def test_an_interrupted_step_ends_when_it_was_interrupted(tmp_path: Path) -> None:
    events: list[Row] = [
        ("goal.started", None, 0, START),
        ("step.started", "judge", 1, {"call_id": "judge-1", "base": "b" * 40}),
        ("step.interrupted", "judge", 1, {"call_id": "judge-1", "signal": "SIGTERM"}),
        ("goal.resumed", None, 1, {"runner": "r"}),
    ]
    (span,) = spans(_write(tmp_path, events).records(), "g1")
    assert (span.error, span.end_ns) == ("interrupted by SIGTERM", _ns(2))
    assert [e.name for e in span.events] == ["goal.started", "step.interrupted"]


def test_a_step_still_open_where_the_ledger_ends_has_no_span_yet(tmp_path: Path) -> None:
    events = [*RUN, ("step.started", "build", 2, {"call_id": "build-2", "base": "b" * 40})]
    assert len(list(spans(_write(tmp_path, events).records(), "g1"))) == 2


def test_each_run_is_a_trace_of_its_own(tmp_path: Path) -> None:
    run_2 = {"run": 2, "control_commit": "c" * 40, "due_at": T.format(4)}
    events = [*RUN, ("run.started", None, 1, run_2), *_step("build", 1), *_step("judge", 1)]
    ledger = _write(tmp_path, events)
    found = list(spans(ledger.records(), "g1"))
    hashes = _line_hashes(tmp_path)
    assert [s.trace_id for s in found] == [hashes[0][:32]] * 2 + [hashes[5][:32]] * 2
    assert [s.run for s in found] == [1, 1, 2, 2]
    assert [s.span_id for s in spans(ledger.records(), "g1", run=2)] == [
        s.span_id for s in found[2:]
    ]


def test_a_build_s_tokens_and_session_are_the_gen_ai_usage(tmp_path: Path) -> None:
    build = _step("build", 1, tokens=[1200, 200, 80], session="thread-9", cost_usd=0.01, turns=2)
    (span,) = spans(_write(tmp_path, [("goal.started", None, 0, START), *build]).records(), "g1")
    attributes = _attributes(span)
    assert attributes["gen_ai.usage.input_tokens"] == 1200
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 200
    assert attributes["gen_ai.usage.output_tokens"] == 80
    assert attributes["gen_ai.conversation.id"] == "thread-9"


def test_a_judge_is_no_agent_span(tmp_path: Path) -> None:
    (judge,) = spans(_write(tmp_path, _step("judge", 1)).records(), "g1")
    assert not any(key.startswith("gen_ai.") for key, _ in judge.attributes)


@pytest.mark.parametrize(
    ("finished", "expected"),
    [
        ({"timed_out": True, "exit_code": None}, ("timeout", "timed out")),
        ({"exit_code": None, "signal": "SIGKILL"}, ("signal", "ended by SIGKILL")),
        ({"exit_code": 3}, ("exit_code", "exited 3")),
        ({"result": "tamper"}, ("tamper", "result tamper")),
    ],
)
def test_how_a_step_failed_is_its_status(
    tmp_path: Path, finished: dict[str, Any], expected: tuple[str, str]
) -> None:
    (span,) = spans(_write(tmp_path, _step("build", 1, **finished)).records(), "g1")
    assert (_attributes(span)["error.type"], span.error) == expected


def test_hostile_values_are_left_out_or_shown_escaped(tmp_path: Path) -> None:
    """An agent's bytes in a step's record: wrong types leave an attribute out, control and
    bidi characters are shown as escapes, long text is cut, prose is never taken."""
    build = _step(
        "build",
        1,
        turns="many",
        cost_usd=True,
        tokens=["1", 2],
        failing_test="t\x1b[31m\u202eevil\n" + "x" * 5000,
        session=["not", "text"],
        summary="SUMMARY-" * 10,
        output_tail="TAIL-" * 10,
        agent_error="ERROR-TEXT",
    )
    (span,) = spans(_write(tmp_path, build).records(), "g1")
    attributes = _attributes(span)
    for absent in ("harness.turns", "harness.cost_usd", "gen_ai.usage.input_tokens"):
        assert absent not in attributes
    assert "gen_ai.conversation.id" not in attributes
    shown = attributes["harness.failing_test"]
    assert shown.startswith("t\\x1b[31m\\u202eevil\\n") and len(shown) == 1000
    document = otlp_json([span], "g1").decode()
    assert "SUMMARY-" not in document and "TAIL-" not in document and "ERROR-TEXT" not in document


def test_events_beyond_the_bound_are_counted_as_dropped(tmp_path: Path) -> None:
    resumed = [("goal.resumed", None, 1, {"runner": f"r{i}"}) for i in range(MAX_SPAN_EVENTS + 5)]
    ledger = Ledger(tmp_path, "g1", KEY)
    ledger.load()
    for kind, step, iteration, data in [*resumed, *_step("build", 1)]:
        ledger.append(kind, step, iteration, data, T.format(1))
    (span,) = spans(Ledger(tmp_path, "g1", KEY).records(), "g1")
    assert (len(span.events), span.dropped_events) == (MAX_SPAN_EVENTS, 5)
    assert dict(span.events[-1].attributes)["harness.runner"] == f"r{MAX_SPAN_EVENTS + 4}"


def test_a_time_the_harness_never_writes_is_a_broken_record(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, "g1", KEY)
    ledger.load()
    record = ledger.append("goal.resumed", None, 1, {"runner": "r"}, "yesterday")
    with pytest.raises(
        LedgerBroken,
        match=r"^ledger/g1/events/000001.jsonl: line 1 \(event 1\): ts: 'yesterday' is not",
    ):
        nanos(record)


def test_the_otlp_json_is_canonical(tmp_path: Path) -> None:
    (span,) = spans(_write(tmp_path, _step("build", 1)).records(), "g1")
    document = otlp_json([span], "g1")
    parsed = json.loads(document)
    assert document == json.dumps(parsed, sort_keys=True, separators=(",", ":")).encode() + b"\n"
    encoded = parsed["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert (encoded["traceId"], encoded["spanId"]) == (span.trace_id, span.span_id)
    assert encoded["startTimeUnixNano"] == str(_ns(0)) and encoded["kind"] == 1
    values = {a["key"]: a["value"] for a in encoded["attributes"]}
    assert values["harness.iteration"] == {"intValue": "1"}
    assert values["harness.step.timed_out"] == {"boolValue": False}
    assert values["harness.step.duration_s"] == {"doubleValue": 0.5}


def _ns(second: int) -> int:
    return (1893456000 + second) * 1_000_000_000
