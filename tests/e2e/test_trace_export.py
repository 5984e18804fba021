"""Live export (issue 31): with OTEL_EXPORTER_OTLP_ENDPOINT set, `harness run` sends each
step's span, the very span `harness trace` renders, to an OTLP/HTTP collector; a collector
that is down or hangs, or an SDK that is not installed, never fails or holds up a run, and
the collector's address and credentials never reach a step."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.managed import ManagedFactory, ManagedRepo, base_goal
from tests.otlp import all_spans, attributes, parse_json, parse_protobuf

TOKEN = "otel-collector-token-5f1c2a"  # what the collector's header carries


@dataclass
class Received:
    posts: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)


@contextmanager
def collector() -> Iterator[tuple[str, Received]]:
    """An OTLP/HTTP receiver on 127.0.0.1: every POST kept, answered 200 with an empty
    ExportTraceServiceResponse."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            headers = {name.lower(): value for name, value in self.headers.items()}
            received.posts.append((self.path, headers, body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", received
    finally:
        server.shutdown()
        server.server_close()


def _otel_env(repo: ManagedRepo, endpoint: str, **more: str) -> dict[str, str]:
    return repo.env | {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{TOKEN}",
        **more,
    }


def _step_starts(repo: ManagedRepo) -> list[str]:
    lines = (repo.ledger_dir / "events" / "000001.jsonl").read_bytes().splitlines(True)
    return [
        hashlib.sha256(line).hexdigest()[:16]
        for line in lines
        if json.loads(line)["e"]["type"] == "step.started"
    ]


def test_live_export_reaches_the_collector_with_one_span_per_step(
    managed: ManagedFactory,
) -> None:
    repo = managed()  # build, a failing judge, build, a passing judge: completed
    with collector() as (endpoint, received):
        run = repo.harness("run", env=_otel_env(repo, endpoint))
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert repo.status()["status"] == "completed"
    assert {path for path, _, _ in received.posts} == {"/v1/traces"}
    assert all(h["authorization"] == f"Bearer {TOKEN}" for _, h, _ in received.posts)
    assert all(h["content-type"] == "application/x-protobuf" for _, h, _ in received.posts)
    requests = [parse_protobuf(body) for _, _, body in received.posts]
    sent = [span for request in requests for span in all_spans(request)]
    assert [span.span_id.hex() for span in sent] == _step_starts(repo)  # one per step
    assert [span.status.code for span in sent] == [0, 2, 0, 0]  # judge 1 failed
    # The same spans `harness trace` renders from the ledger: one mapping, two sinks.
    traced = repo.harness("trace", repo.goal_id, check=0)
    rendered = all_spans(parse_json(traced.stdout))
    for span in sent:
        span.ClearField("flags")  # the SDK's trace flags, which OTLP/JSON leaves out
    assert sent == rendered
    expected_resource = parse_json(traced.stdout).resource_spans[0].resource
    assert all(r.resource_spans[0].resource == expected_resource for r in requests)


def test_ship_sends_the_ship_step_alone_with_the_gate_and_decision_before_it(
    managed: ManagedFactory,
) -> None:
    """`harness ship` acting at once exports as `run` does: only the span of the step it
    ran (the steps before it were recorded, and sent, by the run that ran them), with the
    ship gate the goal waited at and the signed decision as its span events."""
    ship = {"run": ["sh", "-c", "true"]}
    repo = managed(goal=base_goal() | {"ship": ship}, mode="fix-on-1")
    repo.harness("run", check=0)
    assert repo.status()["gate"] == "ship"
    with collector() as (endpoint, received):
        env = _otel_env(repo, endpoint)
        repo.harness("ship", "g1", "--key", str(repo.key.private), env=env, check=0)
    assert repo.status()["status"] == "completed"
    (sent,) = [span for _, _, body in received.posts for span in all_spans(parse_protobuf(body))]
    assert sent.span_id.hex() == _step_starts(repo)[-1]
    assert [event.name for event in sent.events] == ["goal.gated", "decision.used"]
    assert attributes(sent)["harness.gate"] == "ship"
    sent.ClearField("flags")
    assert sent == all_spans(parse_json(repo.harness("trace", "g1", check=0).stdout))[-1]


@pytest.mark.parametrize("failure", ["hangs", "refuses"])
def test_a_collector_that_fails_never_fails_or_holds_up_the_run(
    managed: ManagedFactory, failure: str
) -> None:
    repo = managed(mode="env-dump")  # a build that passes at once; it records its env
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        if failure == "hangs":
            listener.listen(16)  # connections are taken, never answered
        else:
            listener.close()  # nothing listens: refused
        # The exporter's own timeout would wait a minute; the run waits 2 s at its end.
        env = _otel_env(repo, f"http://127.0.0.1:{port}", OTEL_EXPORTER_OTLP_TIMEOUT="60")
        began = time.monotonic()
        run = repo.harness("run", env=env)
        took = time.monotonic() - began
    assert run.returncode == 0, run.stderr
    assert repo.status()["status"] == "completed"
    assert took < 30, took
    assert run.stderr.startswith("harness: traces: 2 of 2 span(s) not exported:"), run.stderr
    assert len(run.stderr.splitlines()) == 1, run.stderr
    seen = json.loads((repo.counters / "env.json").read_text())
    assert not [name for name in seen if name.startswith("OTEL_EXPORTER_OTLP_")]
    assert TOKEN not in json.dumps(seen)


def test_without_the_sdk_the_run_says_so_once_and_goes_on(
    managed: ManagedFactory, tmp_path: Path
) -> None:
    """The `otel` extra not installed: an `opentelemetry` package without the SDK first on
    the path stands in for it, as `import opentelemetry.sdk` then fails."""
    shadow = tmp_path / "shadow" / "opentelemetry"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    repo = managed(mode="fix-on-1")
    with collector() as (endpoint, received):
        env = _otel_env(repo, endpoint, PYTHONPATH=str(shadow.parent))
        run = repo.harness("run", env=env)
    assert run.returncode == 0, run.stderr
    assert repo.status()["status"] == "completed"
    assert run.stderr.splitlines() == [
        "harness: warning: OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not "
        "installed (opentelemetry.exporter); this run exports no spans "
        "(pip install 'goal-harness[otel]')"
    ]
    assert received.posts == []
