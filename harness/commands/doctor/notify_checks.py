"""Doctor's notify check: what `notify:` in the config names, whether this machine has
each variable it reads (here, or in the environment file `ci cron|systemd` read), and
with `--notify-url URL` one clearly-marked test message POSTed to that URL."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from harness.commands.doctor.findings import OK, WARN, Finding, fail
from harness.commands.notify_env import NotifyEnv, notify_env
from harness.errors import HarnessError, InvalidInput
from harness.loop.control import CONFIG_PATH
from harness.loop.notify import post_status
from harness.model.config import Config

TEST_TIMEOUT_S = 10


def checked_url(url: str | None) -> str | None:
    """`--notify-url`, refused before any check runs when it is not a URL to POST to."""
    if url is not None and not (url.startswith(("http://", "https://")) and urlsplit(url).netloc):
        raise InvalidInput(f"--notify-url: {url!r} (expected an http:// or https:// URL)")
    return url


def notify_checks(
    config: Config | None, root: Path | None, env: Mapping[str, str], url: str | None
) -> list[Finding]:
    found = [_configured(config, root, env)]
    if url is not None:
        found.append(send_test(url, root.name if root else "", _timeout(config)))
    return found


def _configured(config: Config | None, root: Path | None, env: Mapping[str, str]) -> Finding:
    if config is None or config.notify is None:
        return Finding(
            "notify", OK, f"no notify: in {CONFIG_PATH}; no one is told of a parked goal"
        )
    settings = config.notify
    parts = []
    if settings.webhook is not None:
        shown = settings.webhook if settings.webhook.startswith("$") else origin(settings.webhook)
        parts.append(f"webhook {shown}")
    if settings.command is not None:
        parts.append(f"command {settings.command[0]}")
    try:
        file = notify_env(config, root, env, None) if root is not None else None
    except HarnessError:  # the default file inside the repository: say it as missing
        file = None
    missing = [name for name in config.notify_variables() if not _has(name, env, file)]
    where = ", ".join(_where(name, env, file) for name in config.notify_variables())
    text = ", ".join(parts) + (f"; reads {where}" if where else "")
    text += "; nothing sent (`harness doctor --notify-url URL` posts a test message)"
    if not missing:
        return Finding("notify", OK, text)
    store = file.file if file is not None else "the runner's environment"
    fix = (
        f"set {', '.join(missing)} where `harness run` runs: NAME='value' lines in {store} "
        "(chmod 600), which `harness ci cron|systemd` read; in a workflow, a repository secret"
    )
    return Finding("notify", WARN, f"{text}; not set: {', '.join(missing)}", fix)


def send_test(url: str, repository: str, timeout_s: int) -> Finding:
    """POST a message marked as a test (`status: test`, `test: true`): the server's answer
    or the connection error; the URL shown only to its host (a path can hold a token)."""
    document = {
        "goal": None,
        "status": "test",
        "test": True,
        "repository": repository,
        "text": f"goal-harness: test notification from `harness doctor` ({repository}); "
        "no goal changed",
    }
    body = json.dumps(document, sort_keys=True).encode("utf-8")
    status, problem = post_status(url, body, timeout_s)
    if problem is None:
        return Finding("notify-url", OK, f"test message POSTed to {origin(url)}: HTTP {status}")
    fix = "check the URL and that the server takes a JSON POST (notify.md)"
    return fail("notify-url", f"test message to {origin(url)} failed: {problem}", fix)


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}/…"


def _has(name: str, env: Mapping[str, str], file: NotifyEnv | None) -> bool:
    return bool(env.get(name)) or (file is not None and name in file.assigned())


def _where(name: str, env: Mapping[str, str], file: NotifyEnv | None) -> str:
    if env.get(name):
        return f"{name} (set here)"
    if file is not None and name in file.assigned():
        return f"{name} (in {file.file})"
    return f"{name} (not set)"


def _timeout(config: Config | None) -> int:
    return config.notify.timeout_s if config is not None and config.notify else TEST_TIMEOUT_S
