"""A step's network in the goal file and the config (model/network.py): every refusal names
the file, the key and what was expected; the allowlist matches as the proxy applies it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from harness.errors import InvalidInput
from harness.model.config import DEFAULT_DEFAULTS, parse_config
from harness.model.goal import Goal, parse_goal
from harness.model.network import allowlist_from, normal_host

ENTRY = (
    "(expected a host name (api.example.com), *.DOMAIN (every name below it), an IPv4 address "
    "or a bracketed IPv6 one, each optionally with :PORT (1-65535))"
)


def _goal(build: dict[str, Any], config: bytes | None = None, **more: Any) -> Goal:
    raw = {
        "version": 1,
        "id": "g1",
        "owner": "alice@example.com",
        "objective": "x",
        "build": {"run": "agent"} | build,
        "judge": {"run": "pytest"},
        **more,
    }
    defaults = parse_config(config, ".harness/config.yaml").defaults if config else DEFAULT_DEFAULTS
    return parse_goal(yaml.safe_dump(raw).encode(), "goals/g1.yaml", "g1", defaults)


def test_an_allowlist_is_a_step_without_the_runners_network() -> None:
    goal = _goal({"network": {"allow": ["API.Example.com.", "*.example.org", "127.0.0.1:8080"]}})
    assert goal.build.network is False and goal.build.allow is not None
    assert goal.build.allow.as_strings() == ["api.example.com", "*.example.org", "127.0.0.1:8080"]
    assert goal.offline_steps() == ["build.network.allow"]
    assert goal.judge.allow is None and goal.judge.network is True


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("*.com", "'*.com' names a whole top-level domain"),
        ("*", "'*' has a * that is not a leading `*.`"),
        ("a.*.com", "'a.*.com' has a * that is not a leading `*.`"),
        ("a b.com", "'a b.com' is not a host name"),
        ("under_score.com", "'under_score.com' is not a host name"),
        ("-a.com", "'-a.com' is not a host name"),
        ("127.1", "'127.1' is not a host name"),  # another spelling of an address
        ("2130706433", "'2130706433' is not a host name"),
        ("::1", "'::1' is an IPv6 address without brackets ([::1]:443)"),
        ("[127.0.0.1]", "'[127.0.0.1]' is not a bracketed IPv6 address"),
        ("[::1", "'[::1' has no closing ]"),
        ("[::1]x", "'[::1]x' has something after ] that is not :PORT"),
        ("a.com:0", "'a.com:0' has port '0', not a whole number from 1 to 65535"),
        ("a.com:65536", "'a.com:65536' has port '65536', not a whole number from 1 to 65535"),
        ("a.com:http", "'a.com:http' has port 'http', not a whole number from 1 to 65535"),
        ("a" * 64 + ".com", f"'{'a' * 57}'... is not a host name"),
    ],
)
def test_an_entry_that_is_no_destination_is_refused_by_name(entry: str, problem: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        _goal({"network": {"allow": ["ok.example.com", entry]}})
    assert str(caught.value) == f"goals/g1.yaml: build.network.allow[1]: {problem} {ENTRY}"


@pytest.mark.parametrize(
    ("network", "message"),
    [
        ({"allow": []}, "build.network.allow: got an empty list (expected a list of 1 to 100"),
        ({"allow": "a.com"}, "build.network.allow: got a string 'a.com' (expected a list of 1"),
        (
            {"allow": ["a.com"], "deny": []},
            "build.network: unknown key 'deny' (expected one of allow)",
        ),
        ({}, "build.network.allow: required key is missing"),
        ("yes", "build.network: got a string 'yes' (expected true (the default), false, or a"),
        ({"allow": [f"h{n}.com" for n in range(101)]}, "build.network.allow: "),
    ],
)
def test_a_network_that_is_none_of_the_three_is_refused(network: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=r"^goals/g1\.yaml: ") as caught:
        _goal({"network": network})
    assert message in str(caught.value)


def test_the_configs_default_network_applies_where_the_goal_names_none() -> None:
    config = b"defaults:\n  network:\n    build: {allow: [api.example.com]}\n    judge: false\n"
    goal = _goal({}, config)
    assert goal.build.allow is not None and goal.build.allow.as_strings() == ["api.example.com"]
    assert (goal.judge.network, goal.judge.allow) == (False, None)
    assert goal.offline_steps() == ["build.network.allow", "judge.network: false"]
    named = _goal({"network": True}, config)  # the goal's own word wins
    assert (named.build.network, named.build.allow) == (True, None)


def test_a_bad_default_network_names_the_config() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_config(
            b"defaults:\n  network:\n    build: {allow: ['*.org']}\n", ".harness/config.yaml"
        )
    assert str(caught.value).startswith(
        ".harness/config.yaml: defaults.network.build.allow[0]: '*.org' names a whole top-level"
    )


def test_on_denied_egress_is_continue_or_park() -> None:
    assert _goal({}).halt.on_denied_egress == "continue"
    assert _goal({}, halt={"on_denied_egress": "park"}).halt.on_denied_egress == "park"
    with pytest.raises(InvalidInput, match=r"halt\.on_denied_egress: 'stop' is not supported"):
        _goal({}, halt={"on_denied_egress": "stop"})


@pytest.mark.parametrize(
    ("entries", "host", "port", "allowed"),
    [
        (["api.example.com"], "api.example.com", 443, True),
        (["api.example.com"], "api.example.com", 8443, True),  # no port: any
        (["api.example.com:443"], "api.example.com", 80, False),
        (["api.example.com"], "x.api.example.com", 443, False),
        (["api.example.com"], "example.com", 443, False),
        (["*.example.com"], "a.b.example.com", 443, True),
        (["*.example.com"], "example.com", 443, False),  # the domain itself: list it too
        (["*.example.com"], "badexample.com", 443, False),
        (["*.example.com"], "example.com.evil.net", 443, False),
        (["127.0.0.1:8080"], "127.0.0.1", 8080, True),
        (["127.0.0.1:8080"], "127.0.0.1", 8081, False),
        (["127.0.0.1"], "localhost", 80, False),  # an address matches an address only
        (["localhost"], "127.0.0.1", 80, False),  # and a name a name only
        (["[::1]:80"], "::1", 80, True),
        (["[::1]:80"], "0:0:0:0:0:0:0:1", 80, True),  # the same address, spelt out
        (["*.example.com"], "2130706433", 80, False),
        (["*.example.com"], "a..example.com", 80, False),
    ],
)
def test_matching(entries: list[str], host: str, port: int, allowed: bool) -> None:
    allow = allowlist_from(entries, "t", "allow")
    assert allow.allows(normal_host(host), port) is allowed


def test_normal_host() -> None:
    assert normal_host("API.Example.COM.") == "api.example.com"
    assert normal_host("[::1]") == "::1"
