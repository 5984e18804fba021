"""Claude Code, the real CLI, driven through `harness run` against the scripted server."""

from __future__ import annotations

import json
import re
from pathlib import Path

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
from tests.fakes.anthropic import tool_result
from tests.fakes.script import Reply, Tokens, call, fail, say

# The template names no model: claude 2.1.332's default, claude-opus-5-5, at $4 in / $20
# out per million tokens: 1000 in, 50 out is $0.005.
CALL = Tokens(1000, 50)
CALL_USD = 0.005
HUGE = 1_200_000  # characters of the final answer: stdout is then over 1 MiB


def edit(path: str, old: str, new: str) -> list[Reply]:
    # Claude Code refuses to Write or Edit a file this session has not Read (the tool
    # result is "File has not been read yet"), so a build reads it first, as a model would.
    return [
        call("Read", {"file_path": path}, CALL),
        call("Edit", {"file_path": path, "old_string": old, "new_string": new}, CALL),
        say(f"value.txt now says {new}.", CALL),
    ]


def write_then_fix(scenario: Scenario) -> None:
    """Build 1 edits in the wrong value; the repair build edits it right."""
    path = str(scenario.worktree_file)
    scenario.server.script.extend([*edit(path, "unset", "wrong"), *edit(path, "wrong", "right")])


def printed(scenario: Scenario) -> list[dict[str, object]]:
    """The result object each build's claude printed (its whole stdout, in the ledger)."""
    return [json.loads(build["output_tail"]) for build in scenario.builds()]


def test_claude_fixes_on_the_second_try(claude: ScenarioFactory) -> None:
    scenario = claude()
    write_then_fix(scenario)
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert scenario.repo.status()["status"] == "completed"
    assert scenario.on_branch("value.txt") == "right"
    assert scenario.goal_change() == ["value.txt"]
    assert scenario.repo.count("judge") == ["1", "2"]
    calls = scenario.server.model_calls("anthropic")
    assert [(c.path, c.status) for c in calls] == [("/v1/messages?beta=true", 200)] * 6
    assert scenario.server.script.unused == []
    assert scenario.server.others() == []  # no update check, no telemetry, nothing else


def test_claude_two_processes_cost_what_each_printed(claude: ScenarioFactory) -> None:
    scenario = claude()
    write_then_fix(scenario)
    scenario.run()
    results = printed(scenario)
    assert [(r["total_cost_usd"], r["num_turns"]) for r in results] == [(3 * CALL_USD, 3)] * 2
    assert len({r["session_id"] for r in results}) == 2
    used = scenario.used()
    assert used["cost_usd"] == pytest.approx(6 * CALL_USD)
    assert used["turns"] == 6


def test_claude_resumed_session_counts_both_processes(claude: ScenarioFactory) -> None:
    scenario = claude(resume=True)
    write_then_fix(scenario)
    scenario.run()
    results = printed(scenario)
    assert len({r["session_id"] for r in results}) == 1
    # What the tool printed: a running cost total, turns per process.
    assert [(r["total_cost_usd"], r["num_turns"]) for r in results] == [
        (3 * CALL_USD, 3),
        (pytest.approx(6 * CALL_USD), 3),
    ]
    used = scenario.used()
    assert used["cost_usd"] == pytest.approx(6 * CALL_USD)
    assert used["turns"] == 6


@pytest.mark.parametrize("status", [529, 429])
def test_claude_api_outage_spends_no_iteration(claude: ScenarioFactory, status: int) -> None:
    scenario = claude(halt={"unavailable_tries": 2, "unavailable_backoff": "1s"})
    scenario.server.script.default = fail(status, retry_after=0)
    message = outage(scenario, 2, lambda output: str(json.loads(output)["result"]))
    expected = {
        529: "API Error: 529 scripted 529. This is a server-side issue",
        429: "API Error: Request rejected (429) · scripted 429",
    }
    assert message.startswith(expected[status])
    # CLAUDE_CODE_MAX_RETRIES=1: two calls per build, each answered `status`
    assert [c.status for c in scenario.server.model_calls()] == [status] * 4


def test_claude_killed_by_its_timeout_counts_what_its_transcript_recorded(
    claude: ScenarioFactory,
) -> None:
    # Two paid calls, then the server stalls: the build is killed by its timeout and
    # prints no result. Claude wrote each message and, on SIGTERM, the session's cost.
    scenario = claude(budget={"max_iterations": 1}, timeout="12s")
    read = call("Read", {"file_path": str(scenario.worktree_file)}, CALL)
    scenario.server.script.extend([read, read])
    scenario.server.script.default = say("too late", delay_s=120)
    scenario.run()
    [build] = scenario.builds()
    assert (build["timed_out"], build["output_tail"]) == (True, "")
    recorded, session = transcript_cost(scenario.home)
    assert recorded == 2 * CALL_USD
    assert (build["cost_usd"], build["turns"], build.get("session")) == (recorded, 2, session)
    assert scenario.used()["cost_usd"] == recorded
    # the two scripted replies, then the stalled default (None) the kill cut off
    assert [c.reply for c in scenario.server.model_calls()] == [0, 1, None]


def transcript_cost(home: Path) -> tuple[float, str]:
    """The session's cost as claude last wrote it in its one transcript (`cost-state`),
    and the session's id."""
    [transcript] = (home / ".claude" / "projects").glob("*/*.jsonl")
    states = [json.loads(line) for line in transcript.read_text().splitlines()]
    return float(
        [s for s in states if s.get("type") == "cost-state"][-1]["totalCostUSD"]
    ), transcript.stem


# $0.04 a call at the default model's $4/$20 per million: 16 of them would be $0.64.
BIG_CALL = Tokens(5000, 1000)
BIG_CALL_USD = 0.04


def test_claude_build_stops_within_one_call_of_the_cost_cap(claude: ScenarioFactory) -> None:
    # The template hands claude what is left of the budget (HARNESS_BUDGET_COST_USD=0.1)
    # as --max-budget-usd: claude stops once a call takes it past that.
    scenario = claude(budget={"max_cost_usd": 0.10})
    read = call("Read", {"file_path": str(scenario.worktree_file)}, BIG_CALL)
    scenario.server.script.extend([*[read] * 15, say("done", BIG_CALL)])
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    [build] = scenario.builds()
    [result] = printed(scenario)
    served = len(scenario.server.model_calls())
    assert (result["subtype"], served) == ("error_max_budget_usd", 3)
    assert build["cost_usd"] == result["total_cost_usd"] == pytest.approx(served * BIG_CALL_USD)
    used = scenario.used()["cost_usd"]
    assert 0.10 <= used <= 0.10 + BIG_CALL_USD
    status = scenario.repo.status()
    assert (status["status"], status["gate"]) == ("needs_attention", "budget_exhausted")


def test_claude_output_over_one_mib_is_counted_once(claude: ScenarioFactory) -> None:
    # --output-format json prints one result object, so a huge tool result does not make
    # stdout large; the final answer's text does (it is the result's `result`). Resumed,
    # so the second build's cost is the session's total and must be told apart.
    scenario = claude(resume=True)
    path = str(scenario.worktree_file)
    huge = "x" * HUGE
    for old, new in (("unset", "wrong"), ("wrong", "right")):
        *work, _ = edit(path, old, new)
        scenario.server.script.extend([*work, say(huge, CALL)])
    scenario.run()
    assert scenario.repo.status()["status"] == "completed"
    builds = scenario.builds()
    for build in builds:
        # The ledger keeps a tail: the output was longer, and its start (the result's
        # cost and session) is gone from it.
        # (claude prints the answer whole: 1,201,648 bytes for a 1.2M-character answer)
        assert re.match(r"\[… \d+ characters cut\]", build["output_tail"])
        assert "total_cost_usd" not in build["output_tail"]
    assert [(b["reported_cost_usd"], b["reported_turns"]) for b in builds] == [
        (3 * CALL_USD, 3),
        (pytest.approx(6 * CALL_USD), 3),
    ]
    used = scenario.used()
    assert used["cost_usd"] == pytest.approx(6 * CALL_USD)
    assert used["turns"] == 6


def test_claude_builds_contained(claude: ScenarioFactory) -> None:
    # The template's build under bubblewrap (`sandbox: required`): the edit lands in the
    # worktree, the spend is counted from what claude printed.
    scenario = claude(contained="")
    scenario.server.script.extend(edit(str(scenario.worktree_file), "unset", "right"))
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert scenario.repo.status()["status"] == "completed"
    assert scenario.on_branch("value.txt") == "right"
    started = [e for e in scenario.events() if e["type"] == "step.started"]
    assert {e["data"]["sandbox"] for e in started} == {"bwrap"}
    used = scenario.used()
    assert (used["cost_usd"], used["turns"]) == (pytest.approx(3 * CALL_USD), 3)
    assert scenario.server.others() == []
    assert_reached_only_through_the_proxy(scenario, API_HOSTS["claude"])
    # The version the tool reported of itself, kept for the attestation (agents.md).
    assert {b.get("agent_version") for b in scenario.builds()} == {_pinned("claude")}


def test_claude_running_pytest_is_no_hidden_file(claude: ScenarioFactory) -> None:
    # The model has claude run the tests with its Bash tool, as it does on a real task;
    # pytest writes .pytest_cache/ with a .gitignore of `*` in a repository that ignores
    # nothing. Before issue 27 that stopped the goal at tamper ("hid new files with an
    # ignore rule of its own: .pytest_cache/.gitignore").
    scenario = without_gitignore(claude(budget={"max_iterations": 1}, files=TINY_TEST))
    pytest_run = call("Bash", {"command": RUN_PYTEST, "description": "Run the tests"}, CALL)
    scenario.server.script.extend(
        [pytest_run, *edit(str(scenario.worktree_file), "unset", "right")]
    )
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert_pytest_cache_allowed(scenario)
    assert "1 passed" in json.dumps(scenario.server.model_calls("anthropic")[1].body)


def test_claude_printing_its_api_key_records_only_its_receipt(claude: ScenarioFactory) -> None:
    # The model has claude print its own key with its Bash tool, then repeats what it got
    # in its answer (--output-format json prints the answer, never a tool result): the
    # key reaches claude's stdout, which the ledger keeps, only through the redactor.
    scenario = claude(budget={"max_iterations": 1})
    key = scenario.repo.env["ANTHROPIC_API_KEY"] = realistic_key("sk-ant-api03-")
    *work, _ = edit(str(scenario.worktree_file), "unset", "right")
    show = call("Bash", {"command": "printenv ANTHROPIC_API_KEY", "description": "Key"}, CALL)
    repeat = Reply(text_of=lambda request: "It printed " + tool_result(request.body), tokens=CALL)
    scenario.server.script.extend([*work, show, repeat])
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert scenario.repo.status()["status"] == "completed"
    assert key in tool_result(scenario.server.model_calls("anthropic")[-1].body)
    assert_key_only_as_receipt(scenario, run, "ANTHROPIC_API_KEY", key)


def _pinned(tool: str) -> str:
    return next(cli.pinned for cli in SUPPORTED if cli.name == tool)
