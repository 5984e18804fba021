"""aider, the real CLI, driven through `harness run` against the scripted server."""

from __future__ import annotations

import json
import re
import shlex

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
from tests.fakes.chat import edit
from tests.fakes.script import Tokens, fail, say
from tests.managed import OWNER, git

# openai/gpt-4o in aider's (litellm's) price list: $2.50 in, $10 out per million tokens.
CALL = Tokens(1000, 50)
CALL_USD = 0.003
SESSION_COST = re.compile(r"Cost: \$([0-9.]+) message, \$([0-9.]+) session\.")


def write_then_fix(scenario: Scenario) -> None:
    """Build 1 edits in the wrong value, the repair build the right one: one call each."""
    scenario.server.script.extend(
        [
            say("Setting it.\n\n" + edit("value.txt", "unset\n", "wrong\n"), CALL),
            say("Fixing it.\n\n" + edit("value.txt", "wrong\n", "right\n"), CALL),
        ]
    )


def test_aider_fixes_on_the_second_try_with_only_the_goal_changed(aider: ScenarioFactory) -> None:
    scenario = aider()
    write_then_fix(scenario)
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert scenario.repo.status()["status"] == "completed"
    assert scenario.on_branch("value.txt") == "right"
    assert scenario.repo.count("judge") == ["1", "2"]
    # aider's own files (.aider*) and .gitignore edits are not part of the goal's change
    assert scenario.goal_change() == ["value.txt"]
    assert scenario.on_branch(".gitignore") == "__pycache__/\n/.harness/worktrees/".strip()
    assert not list(scenario.repo.worktree.glob(".aider*"))
    # the repair prompt carried the judge's "Docs:" URL; aider did not follow it, and made
    # no request but its two model calls (no price download, no update check)
    calls = scenario.server.model_calls("chat")
    assert scenario.server.url + "/docs/value-page" in json.dumps(calls[1].body)
    assert [(c.path, c.status, c.stream) for c in calls] == [
        ("/v1/chat/completions", 200, False)
    ] * 2
    assert scenario.server.others() == []


def test_aider_without_a_git_identity_leaves_git_config_alone(aider: ScenarioFactory) -> None:
    # Without --no-git, aider with no git identity writes user.name and user.email into
    # the repository's .git/config (a tamper the harness stops at; in the sandbox a
    # crash on the read-only .git). The template's --no-git keeps it out of git.
    scenario = aider(budget={"max_iterations": 1})
    (scenario.home / ".gitconfig").unlink()
    config = (scenario.repo.root / ".git" / "config").read_bytes()
    scenario.server.script.extend(
        [say("Setting it.\n\n" + edit("value.txt", "unset\n", "right\n"), CALL)]
    )
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert scenario.repo.status()["status"] == "completed"
    [build] = scenario.builds()
    assert build["changed"] == ["value.txt"]
    assert (scenario.repo.root / ".git" / "config").read_bytes() == config


def test_aider_budget_is_its_printed_cost(aider: ScenarioFactory) -> None:
    scenario = aider()
    write_then_fix(scenario)
    scenario.run()
    sessions = [SESSION_COST.findall(b["output_tail"])[-1][1] for b in scenario.builds()]
    assert sessions == ["0.0030", "0.0030"]
    assert scenario.used()["cost_usd"] == pytest.approx(2 * CALL_USD)


def test_aider_api_outage_spends_no_iteration(aider: ScenarioFactory) -> None:
    # aider has no retry knob: its own backoff runs until 60 s of delay (about 80 s, 27
    # calls), so one try is all this test affords: `unavailable_tries: 1`.
    scenario = aider(halt={"unavailable_tries": 1})
    scenario.server.script.default = fail(500)
    message = outage(scenario, 1, last_litellm_error)
    assert message.startswith("litellm.InternalServerError: ")
    assert {c.status for c in scenario.server.model_calls()} == {500}


def last_litellm_error(output: str) -> str:
    """The last `litellm.<Name>Error: …` line aider printed."""
    return [line for line in output.splitlines() if line.startswith("litellm.")][-1].strip()


def test_aider_editing_a_protected_path_is_caught_as_tamper_and_restored(
    aider: ScenarioFactory,
) -> None:
    # The template has --no-auto-commits, so aider does not commit its edit itself; an edit
    # of the owners file (not named on aider's command line, which --yes-always lets it
    # add) is caught after the build and restored.
    scenario = aider(budget={"max_iterations": 1})
    owners = f"{OWNER} {scenario.repo.key.public}\n"
    mallory = "mallory@example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ9ZcHh0kQ6nqlqS0tPn6q1QJ1mH7xX5c8K0q9Q8lq8R\n"
    answer = edit(".harness/owners", owners, owners + mallory) + edit(
        "value.txt", "unset\n", "right\n"
    )
    # aider adds a file an edit names to the chat, then asks the model again: answered alike
    scenario.server.script.extend([say("Adding a key.\n\n" + answer, CALL)] * 2)
    run = scenario.run()
    assert run.returncode == 0, run.stderr  # a stop is a state, not a failed run
    status = scenario.repo.status()
    assert (status["status"], status["gate"]) == ("needs_attention", "tamper")
    [build] = scenario.builds()
    assert (build["result"], build["changed"]) == ("tamper", [".harness/owners", "value.txt"])
    [gated] = [e["data"] for e in scenario.events() if e["type"] == "goal.gated"]
    assert gated["detail"] == "touched .harness/owners"
    assert (scenario.repo.worktree / ".harness" / "owners").read_text() == owners
    assert scenario.on_branch(".harness/owners") + "\n" == owners
    assert scenario.repo.count("judge") == []
    # every commit on the goal branch is the harness's: aider made none of its own
    subjects = git(scenario.repo.root, "log", "--format=%s", "main..harness/g1").split("\n")
    assert subjects == [
        "harness(g1): needs_attention (tamper)",
        "harness(g1): build 1 started",
        "harness(g1): goal started",
    ]


def test_aider_builds_contained(aider: ScenarioFactory) -> None:
    # The template's build under bubblewrap (`sandbox: required`): .git is read-only
    # inside, aider does not touch it, the harness commits its edit.
    scenario = aider(contained="")
    scenario.server.script.extend(
        [say("Setting it.\n\n" + edit("value.txt", "unset\n", "right\n"), CALL)]
    )
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert scenario.repo.status()["status"] == "completed", scenario.builds()[0]["output_tail"]
    assert scenario.on_branch("value.txt") == "right"
    assert scenario.goal_change() == ["value.txt"]
    started = [e for e in scenario.events() if e["type"] == "step.started"]
    assert {e["data"]["sandbox"] for e in started} == {"bwrap"}
    assert scenario.used()["cost_usd"] == pytest.approx(CALL_USD)
    assert scenario.server.others() == []
    assert_reached_only_through_the_proxy(scenario, API_HOSTS["aider"])
    # The version the tool reported of itself, kept for the attestation (agents.md).
    assert {b.get("agent_version") for b in scenario.builds()} == {_pinned("aider")}


def test_aider_running_pytest_is_no_hidden_file(aider: ScenarioFactory) -> None:
    # aider runs no command its model suggests under --yes-always (a shell block needs an
    # explicit yes, which --yes-always answers no); it runs the tests itself after an edit
    # with --auto-test. pytest writes .pytest_cache/ with a .gitignore of `*` in a
    # repository that ignores nothing.
    flags = f"--auto-test --test-cmd {shlex.quote(RUN_PYTEST)}"
    scenario = aider(budget={"max_iterations": 1}, files=TINY_TEST, flags=flags)
    without_gitignore(scenario)
    scenario.server.script.extend(
        [say("Setting it.\n\n" + edit("value.txt", "unset\n", "right\n"), CALL)]
    )
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert_pytest_cache_allowed(scenario)
    assert "1 passed" in scenario.builds()[0]["output_tail"]


def test_aider_printing_its_api_key_records_only_its_receipt(aider: ScenarioFactory) -> None:
    # aider runs no command its model suggests (see the pytest case), so its own test run
    # after the model's edit prints the key: `--auto-test --test-cmd "printenv …"`, whose
    # output aider prints, which the ledger keeps, only through the redactor.
    flags = "--auto-test --test-cmd 'printenv OPENAI_API_KEY'"
    scenario = aider(budget={"max_iterations": 1}, flags=flags)
    key = scenario.repo.env["OPENAI_API_KEY"] = realistic_key("sk-proj-")
    scenario.server.script.extend(
        [say("Setting it.\n\n" + edit("value.txt", "unset\n", "right\n"), CALL)]
    )
    run = scenario.run()
    assert run.returncode == 0, run.stderr
    assert scenario.repo.status()["status"] == "completed"
    assert_key_only_as_receipt(scenario, run, "OPENAI_API_KEY", key)


def _pinned(tool: str) -> str:
    return next(cli.pinned for cli in SUPPORTED if cli.name == tool)
