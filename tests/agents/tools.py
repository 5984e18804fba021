"""The isolated environment each agent CLI runs in, pointed at the scripted server.

The CLIs are found by tests/pinned_agents.py (from scripts/install-agents' `agents.env`).
Each test gets its own HOME (and CODEX_HOME) below the installer's cache folder, not under
/tmp (codex refuses to make its helper binaries under a temporary folder), pointing the
tool at the scripted server; every proxy variable points at the server too, so any other
request a tool makes is recorded and refused, never sent.

A contained build runs with its template's allowlist (`harness new --agent`): the tool is
pointed at the scripted server by its model API's own name (`http://api.anthropic.com:PORT`),
which only the harness's proxy, outside the sandbox, resolves (to 127.0.0.1, through
`HARNESS_EGRESS_RESOLVE`, `egress_env`); inside, nothing else leads there.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.fakes.server import ModelServer


def no_outbound(server: ModelServer) -> dict[str, str]:
    proxies = {name: server.url for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")}
    proxies |= {name.lower(): value for name, value in proxies.items()}
    return proxies | {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}


def egress_env(host: str, server: ModelServer) -> tuple[str, dict[str, str]]:
    """The server's URL by the model API's name, and the hook that resolves it to the
    server in the proxy."""
    return f"http://{host}:{server.port}", {"HARNESS_EGRESS_RESOLVE": f"{host}=127.0.0.1"}


def claude_env(home: Path, url: str) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_MAX_RETRIES": "1",  # default 10: about 3 minutes of backoff on a 529
        "IS_SANDBOX": "1",  # as root, --dangerously-skip-permissions needs it
    }


CODEX_CONFIG = """\
model = "gpt-5.5"
model_provider = "fake"
check_for_update_on_startup = false

[analytics]
enabled = false

[model_providers.fake]
name = "fake"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "FAKE_OPENAI_API_KEY"
request_max_retries = 1
stream_max_retries = 1
stream_idle_timeout_ms = 20000
"""


def codex_env(home: Path, url: str) -> dict[str, str]:
    # A custom provider: codex ignores OPENAI_BASE_URL. gpt-5.5 is in codex's catalog
    # (another name gets fallback metadata and no apply_patch tool).
    codex_home = home / "codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(CODEX_CONFIG.format(url=url))
    # The key's variable has a name that says secret, as a gateway key's does in the guide
    # (docs/guide/agents/codex.md): the redactor knows it by its name alone.
    return {"CODEX_HOME": str(codex_home), "FAKE_OPENAI_API_KEY": "sk-test-not-a-key"}


GIT_IDENTITY = "[user]\n\tname = Agent Tester\n\temail = agent@example.com\n"


def aider_env(home: Path, url: str, aider: Path) -> dict[str, str]:
    # aider downloads its price list unless one is cached, and litellm fetches its own at
    # import unless LITELLM_LOCAL_MODEL_COST_MAP is set: both seen through the proxy.
    # With no git identity aider writes user.name and user.email into the repository's
    # .git/config itself (a tamper the harness stops at); a person's machine has one.
    (home / ".gitconfig").write_text(GIT_IDENTITY)
    caches = home / ".aider" / "caches"
    caches.mkdir(parents=True)
    venv = aider.resolve().parent.parent
    bundled = next(
        venv.glob("lib/python3*/site-packages/litellm/model_prices_and_context_window_backup.json")
    )
    shutil.copyfile(bundled, caches / "model_prices_and_context_window.json")
    return {
        "OPENAI_API_BASE": url + "/v1",
        "OPENAI_API_KEY": "sk-test-not-a-key",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }
