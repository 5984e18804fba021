"""Egress metrics for scripts/bench (docs/specs/performance.md, sandbox.md "Egress by name").
Every side is a build through `sandbox.contain` and `steps.run_step` under bwrap, as the
controller runs it; the two sides alternate.

- egress_overhead: a 1 MiB download by a build whose allowlist names the server (the
  forwarder passes the connection to the proxy: a new connection each time, as an `http://`
  proxy request is) against the same download by a build that shares the runner's network.
  The server is on the runner's 127.0.0.1 and sends at 1 Gbit/s (a fast link; a real host
  is further away): the ratio is what a step pays for its proxy on a download. The same
  downloads from an unpaced server (loopback at memory speed, where nothing hides the
  proxy's own cost: two socket crossings instead of one, and the proxy's work for each
  connection) are printed beside it. The client times each download
  inside the step (connect to last byte), 20 a step; the best of all steps' downloads.
- egress_start: how much later a build with an allowlist starts its command than the same
  build without one (network shared): the command prints the wall clock as it starts, the
  harness took it as it entered `contain`. Its ratio is that difference over the target's
  50 ms (target 1.0); both sides' start times are printed.
"""

from __future__ import annotations

import http.server
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from bench import Best, Managed, report, say, settle
from bench_sandbox import _place, _sandboxes

if TYPE_CHECKING:
    from harness.loop.contain.place import Place
    from harness.loop.contain.sandbox import Sandbox
    from harness.model.network import Allowlist

BODY_BYTES = 1 << 20
DOWNLOADS = 20  # per step
START_PER_REP = 5
START_BUDGET_S = 0.050  # the target: an allowlist starts a step at most 50 ms later

# Inside the step: DOWNLOADS downloads of the body, each timed; the best, in seconds. Through
# the proxy urllib reads HTTP_PROXY (the forwarder's); directly it is told to use none.
CLIENT = r"""
import sys, time, urllib.request
url, count, via = sys.argv[1], int(sys.argv[2]), sys.argv[3]
handlers = [] if via == "proxy" else [urllib.request.ProxyHandler({})]
opener = urllib.request.build_opener(*handlers)
best = float("inf")
for _ in range(count):
    started = time.perf_counter()
    body = opener.open(url, timeout=30).read()
    best = min(best, time.perf_counter() - started)
    assert len(body) == int(sys.argv[4]), len(body)
print(best)
"""


LINK_BYTES_PER_S = 125_000_000  # 1 Gbit/s
PACE_CHUNK = 64 * 1024


class _Body(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = os.urandom(BODY_BYTES)
    paced = False

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if not self.paced:
            self.wfile.write(self.body)
            return
        started = time.perf_counter()
        for sent in range(0, len(self.body), PACE_CHUNK):
            due = started + sent / LINK_BYTES_PER_S
            time.sleep(max(0.0, due - time.perf_counter()))
            self.wfile.write(self.body[sent : sent + PACE_CHUNK])

    def log_message(self, *args: object) -> None:
        pass


class _Paced(_Body):
    paced = True


@contextmanager
def _server(handler: type[_Body]) -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def _allow(port: int) -> Allowlist:
    from harness.model.network import allowlist_from

    return allowlist_from([f"127.0.0.1:{port}"], "bench", "allow")


def _step(
    sandbox: Sandbox, place: Place, argv: list[str], allow: Allowlist | None
) -> tuple[str, float]:
    """A build with `allow` (else the runner's network): its stdout, and when it entered
    `contain` (wall clock)."""
    from harness.loop.contain.sandbox import contain
    from harness.loop.steps import run_step

    entered = time.time()
    env = dict(os.environ)
    with contain(
        sandbox, place, argv, env, writable=True, network=allow is None, allow=allow
    ) as box:
        result = run_step(box.argv, place.worktree, box.env, b"", 120.0, bwrap=box.bwrap)
        record = box.egress.stop() if box.egress is not None else None
    if result.exit_code != 0:
        raise SystemExit(f"bench: {' '.join(argv[:3])} failed: {result.output_tail}")
    if allow is not None and (record is None or "egress_error" in record):
        raise SystemExit(f"bench: the proxy's record was lost: {record}")
    return result.stdout_tail, entered


def _downloads(sandbox: Sandbox, place: Place, port: int, reps: int) -> Best:
    best = Best.of("proxy", "direct")
    url = f"http://127.0.0.1:{port}/body"
    for _ in range(reps):
        for via, allow in (("proxy", _allow(port)), ("direct", None)):
            argv = [sys.executable, "-c", CLIENT, url, str(DOWNLOADS), via, str(BODY_BYTES)]
            out, _ = _step(sandbox, place, argv, allow)
            best.add(via, float(out.strip()))
    return best


def bench_egress_overhead(repo: Managed, reps: int) -> None:
    settle()
    contained, _ = _sandboxes()
    place = _place(repo, "egress-overhead")
    with _server(_Paced) as paced, _server(_Body) as unpaced:
        link = _downloads(contained, place, paced, reps)
        loop = _downloads(contained, place, unpaced, reps)
    say(
        f"egress_overhead: 1 MiB from 127.0.0.1 unpaced: through the proxy "
        f"{loop['proxy'] * 1000:.2f} ms, direct {loop['direct'] * 1000:.2f} ms "
        f"(ratio {loop['proxy'] / loop['direct']:.2f}: the proxy's own cost)"
    )
    report(
        "egress_overhead",
        link["proxy"],
        link["direct"],
        f"1 MiB at 1 Gbit/s from 127.0.0.1: through the proxy {link['proxy'] * 1000:.2f} ms, "
        f"direct {link['direct'] * 1000:.2f} ms (best of {reps * DOWNLOADS} each, a new "
        "connection each)",
        "ms",
        {
            "loopback_proxy_ms": loop["proxy"] * 1000,
            "loopback_direct_ms": loop["direct"] * 1000,
            "loopback_ratio": loop["proxy"] / loop["direct"],
        },
    )


def bench_egress_start(repo: Managed, reps: int) -> None:
    settle()
    contained, _ = _sandboxes()
    place = _place(repo, "egress-start")
    argv = ["date", "+%s.%N"]
    best = Best.of("allowlist", "shared")
    allow = _allow(9)  # nothing is reached: the step only starts
    for _ in range(reps * START_PER_REP):
        for side, given in (("allowlist", allow), ("shared", None)):
            out, entered = _step(contained, place, argv, given)
            best.add(side, float(out.strip()) - entered)
    later = best["allowlist"] - best["shared"]
    say(f"egress_start: {later * 1000:.1f} ms later with an allowlist")
    report(
        "egress_start",
        best["allowlist"],
        best["shared"],
        f"the command started {best['allowlist'] * 1000:.1f} ms after `contain` was entered "
        f"with an allowlist, {best['shared'] * 1000:.1f} ms without: {later * 1000:.1f} ms "
        f"later, against a budget of {START_BUDGET_S * 1000:.0f} ms (best of "
        f"{reps * START_PER_REP})",
        "ms",
        {"later_ms": later * 1000},
        ratio=later / START_BUDGET_S,
    )
