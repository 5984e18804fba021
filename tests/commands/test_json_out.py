"""`--json` on approve, ship, unpark, cancel and report (issue 30 item 13): one document,
`{"command", "goal", "exit_code", "error", "lines"}`, the same lines the command prints."""

from __future__ import annotations

import json
from pathlib import Path

from tests.managed import ManagedFactory, base_goal

SHIP = {"run": ["sh", "-c", "echo shipped"]}


def test_each_act_prints_one_document_of_its_lines(managed: ManagedFactory, tmp_path: Path) -> None:
    repo = managed(goal=base_goal() | {"ship": SHIP}, mode="fix-on-1")
    key = ("--key", str(repo.key.private))
    plain = repo.harness("approve", "g1", *key, check=0).stdout
    approved = json.loads(repo.harness("approve", "g1", *key, "--json", check=0).stdout)
    assert approved == {
        "command": "approve",
        "goal": "g1",
        "exit_code": 0,
        "error": None,
        "lines": plain.splitlines(),
    }
    repo.harness("run", check=0)
    shipped = json.loads(repo.harness("ship", "g1", *key, "--json", check=0).stdout)
    assert (shipped["command"], shipped["exit_code"], shipped["error"]) == ("ship", 0, None)
    assert any(text.startswith("signed `ship` for g1") for text in shipped["lines"])
    site = tmp_path / "site"
    report = json.loads(repo.harness("report", "--all", "--out", str(site), "--json").stdout)
    assert (report["goal"], report["exit_code"]) == ([], 0)
    assert report["lines"] == [f"wrote {site / 'index.html'}: 1 goal(s)"]
    cancelled = json.loads(repo.harness("cancel", "g1", "--json", check=0).stdout)
    assert cancelled["lines"] == ["g1 is already completed"]


def test_a_refusal_is_a_document_too_and_still_its_exit_code(managed: ManagedFactory) -> None:
    repo = managed()
    refused = repo.harness("unpark", "g1", "--key", str(repo.key.private), "--json", check=2)
    document = json.loads(refused.stdout)
    assert (document["command"], document["exit_code"], document["lines"]) == ("unpark", 2, [])
    assert document["error"] and document["error"] in refused.stderr
