"""Codex, the real CLI, driven through `harness run` against the scripted server."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from harness.commands.new import API_HOSTS
from harness.loop.agents.support import SUPPORTED
from tests.agents.conftest import ScenarioFactory
from tests.agents.scenario import (
    RUN_PYTEST,
    TINY_TEST,
    Scenario,
    assert_key_only_as_receipt,
    assert_pytest_cache_allowed,
    assert_reached_only_through_the_proxy,
    outage,
    realistic_key,
    without_gitignore,
)
from tests.fakes.script import Reply, Tokens, call, fail, say

# Codex prints tokens, never a cost: the harness prices them from the config.
PRICES = "version: 1\nprices:\n  input_usd_per_million: 1.0\n  cached_input_usd_per_million: 0.5\n  output_usd_per_million: 4.0\n"
CALL = Tokens(1000, 50)
CALL_USD = 0.0012  # 1000 in at $1/M + 50 out at $4/M
HUGE = 1_200_000
# What codex 0.171 still tries to reach with update checks and analytics off in its config;
# the test's proxy refuses them (docs/specs/agents.md). A new one fails the test.
CODEX_OUTBOUND = {
    "CONNECT github.com:443",
    "CONNECT api.github.com:443",
    "CONNECT chatgpt.com:443",
}  # bytes of command output: codex prints them in its JSONL


def patch(old: str, new: str) -> str:
    return f"*** Begin Patch\n*** Update File: value.txt\n@@\n-{old}\n+{new}\n*** End Patch\n"


def edit(old: str, new: str, huge: bool = False) -> list[Reply]:
    replies = [call("apply_patch", patch(old, new), CALL)]
    if huge:
        command = f"yes x | head -c {HUGE}"  # codex's JSONL is then ~1.6 MB (JSON-escaped)
        replies.append(call("exec_command", {"cmd": command}, CALL))
    return [*replies, say(f"value.txt now says {new}.", CALL)]


def write_then_fix(scenario: Scenario, huge: bool = False) -> int:
    """Build 1 patches in the wrong value, the repair build the right one; the model calls."""
    replies = [*edit("unset", "wrong", huge), *edit("wrong", "right", huge)]
    scenario.server.script.extend(replies)
    return len(replies)


def scenario_with_prices(codex: ScenarioFactory, resume: bool = False) -> Scenario:
    return codex(resume=resume, files={".harness/config.yaml": PRICES})


def printed(scenario: Scenario) -> list[list[dict[str, Any]]]:
    """The JSON events each build's codex printed (as far as the ledger's tail keeps them)."""
    events = []
    for build in scenario.builds():
        lines = [line for line in build["output_tail"].splitlines() if line.startswith("{")]
        events.append([json.loads(line) for line in lines])
    return events


def turn_usage(events: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [
        (e["usage"]["input_tokens"], e["usage"]["output_tokens"])
        for e in events
        if e["type"] == "turn.completed"
    ]


def test_codex_fixes_on_the_second_try(codex: ScenarioFactory) -> None:
    scenario = scenario_with_prices(codex)
    calls = write_then_fix(scenario)
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert scenario.repo.status()["status"] == "completed"
    assert scenario.on_branch("value.txt") == "right"
    assert scenario.goal_change() == ["value.txt"]
    assert scenario.repo.count("judge") == ["1", "2"]
    answered = scenario.server.model_calls("responses")
    assert [(c.path, c.status) for c in answered] == [("/v1/responses", 200)] * calls
    assert scenario.server.script.unused == []
    assert {f"{r.method} {r.path}" for r in scenario.server.others()} <= CODEX_OUTBOUND


def test_codex_two_processes_cost_what_each_printed(codex: ScenarioFactory) -> None:
    scenario = scenario_with_prices(codex)
    write_then_fix(scenario)
    scenario.run()
    assert [turn_usage(events) for events in printed(scenario)] == [[(2000, 100)]] * 2
    used = scenario.used()
    assert used["cost_usd"] == pytest.approx(4 * CALL_USD)
    assert used["turns"] == 2


def test_codex_resumed_thread_counts_both_processes(codex: ScenarioFactory) -> None:
    scenario = scenario_with_prices(codex, resume=True)
    write_then_fix(scenario)
    scenario.run()
    events = printed(scenario)
    threads = {e["thread_id"] for build in events for e in build if e["type"] == "thread.started"}
    assert len(threads) == 1
    assert [turn_usage(build) for build in events] == [[(2000, 100)], [(4000, 200)]]
    used = scenario.used()
    assert used["cost_usd"] == pytest.approx(4 * CALL_USD)
    assert used["turns"] == 2


def test_codex_output_over_one_mib_is_counted_once(codex: ScenarioFactory) -> None:
    scenario = scenario_with_prices(codex, resume=True)
    calls = write_then_fix(scenario, huge=True)
    scenario.run()
    for build in scenario.builds():
        # The ledger keeps a tail: the output was longer, and its first line is gone.
        assert re.match(r"\[… \d+ characters cut\]", build["output_tail"])
        assert "thread.started" not in build["output_tail"]
    used = scenario.used()
    assert used["cost_usd"] == pytest.approx(calls * CALL_USD)
    assert used["turns"] == 2


@pytest.mark.parametrize("status", [500, 429])
def test_codex_api_outage_spends_no_iteration(codex: ScenarioFactory, status: int) -> None:
    scenario = codex(halt={"unavailable_tries": 2, "unavailable_backoff": "1s"})
    scenario.server.script.default = fail(status, retry_after=1)
    message = outage(scenario, 2, failed_turn)
    assert message == OUTAGE_MESSAGES[status]
    # request_max_retries = 1 in the test's config: every call answered `status`
    assert {c.status for c in scenario.server.model_calls()} == {status}


# What codex 0.171.0 says in turn.failed (not the server's "scripted <status>").
OUTAGE_MESSAGES = {
    500: "We’re currently experiencing high demand, which may cause temporary errors.",
    429: "exceeded retry limit, last status: 429 Too Many Requests",
}


def failed_turn(output: str) -> str:
    """The message of the `turn.failed` event codex printed last."""
    events = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    [failed] = [e for e in events if e["type"] == "turn.failed"]
    return str(failed["error"]["message"])


def test_codex_killed_by_its_timeout_counts_what_its_rollout_recorded(
    codex: ScenarioFactory,
) -> None:
    # Two paid calls (a patch, a command), then the server stalls: the build is killed by
    # its timeout before any turn ends; codex's rollout holds each response's usage.
    scenario = codex(
        budget={"max_iterations": 1}, timeout="12s", files={".harness/config.yaml": PRICES}
    )
    scenario.server.script.extend(edit("unset", "wrong", huge=False)[:1])
    scenario.server.script.extend([call("exec_command", {"cmd": "true"}, CALL)])
    scenario.server.script.default = say("too late", CALL, delay_s=120)
    scenario.run()
    [build] = scenario.builds()
    assert build["timed_out"] is True
    assert "turn.completed" not in build["output_tail"]
    recorded = rollout_tokens(scenario.home, build["session"])
    assert recorded == [(1000, 0, 50)] * 2
    # both calls are one turn of codex's (one turn_id), the turn the kill cut off
    assert (build["cost_usd"], build["turns"]) == (pytest.approx(2 * CALL_USD), 1)
    assert [c.reply for c in scenario.server.model_calls()] == [0, 1, None]


def rollout_tokens(home: Path, thread: str) -> list[tuple[int, int, int]]:
    """(input, cached, output) of each response codex recorded in the thread's rollout."""
    [rollout] = (home / "codex" / "sessions").glob(f"*/*/*/rollout-*-{thread}.jsonl")
    lines = [json.loads(line) for line in rollout.read_text().splitlines()]
    usages = [line["payload"]["usage"] for line in lines if line["type"] == "token_usage_record"]
    keys = ("input_tokens", "cached_input_tokens", "output_tokens")
    return [(u[keys[0]], u[keys[1]], u[keys[2]]) for u in usages]


def test_codex_builds_contained(codex: ScenarioFactory) -> None:
    # The template's build under bubblewrap (`sandbox: required`), its own
    # `--sandbox workspace-write` nested inside ours; CODEX_HOME bound writable. The patch
    # lands and the tokens are priced.
    scenario = codex(contained=PRICES.removeprefix("version: 1\n"))
    scenario.server.script.extend(edit("unset", "right"))
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert scenario.repo.status()["status"] == "completed", scenario.builds()
    assert scenario.on_branch("value.txt") == "right"
    started = [e for e in scenario.events() if e["type"] == "step.started"]
    assert {e["data"]["sandbox"] for e in started} == {"bwrap"}
    used = scenario.used()
    assert (used["cost_usd"], used["turns"]) == (pytest.approx(2 * CALL_USD), 1)
    # codex 0.171 also asks for GitHub's and ChatGPT's hosts (docs/guide/agents/codex.md):
    # refused, it goes on.
    elsewhere = frozenset({"github.com", "api.github.com", "chatgpt.com"})
    assert_reached_only_through_the_proxy(scenario, API_HOSTS["codex"], elsewhere)
    # The version the tool reported of itself, kept for the attestation (agents.md).
    assert {b.get("agent_version") for b in scenario.builds()} == {_pinned("codex")}


def test_codex_running_pytest_is_no_hidden_file(codex: ScenarioFactory) -> None:
    # The model has codex run the tests (exec_command), as it does on a real task: pytest
    # writes .pytest_cache/ with a .gitignore of `*` in a repository that ignores nothing.
    files = {".harness/config.yaml": PRICES, **TINY_TEST}
    scenario = without_gitignore(codex(budget={"max_iterations": 1}, files=files))
    tests = call("exec_command", {"cmd": RUN_PYTEST}, CALL)
    scenario.server.script.extend([tests, *edit("unset", "right")])
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert_pytest_cache_allowed(scenario)
    assert "1 passed" in json.dumps(scenario.server.model_calls("responses")[1].body)


def test_codex_printing_its_api_key_records_only_its_receipt(codex: ScenarioFactory) -> None:
    # The model has codex print its own key (exec_command); codex's JSONL carries the
    # command's output, which the ledger keeps, only through the redactor.
    scenario = codex(budget={"max_iterations": 1}, files={".harness/config.yaml": PRICES})
    key = scenario.repo.env["FAKE_OPENAI_API_KEY"] = realistic_key("sk-proj-")
    show = call("exec_command", {"cmd": "printenv FAKE_OPENAI_API_KEY"}, CALL)
    scenario.server.script.extend([show, *edit("unset", "right")])
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert scenario.repo.status()["status"] == "completed"
    assert key in json.dumps(scenario.server.model_calls("responses")[1].body)
    assert_key_only_as_receipt(scenario, run, "FAKE_OPENAI_API_KEY", key)


def _pinned(tool: str) -> str:
    return next(cli.pinned for cli in SUPPORTED if cli.name == tool)
