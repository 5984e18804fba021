"""The notifier's variables on a scheduled runner: which the config names, and the file
outside the repository their values come from (docs/specs/cli.md, "ci cron, ci systemd").

`harness ci cron` sources the file in its line's shell (`set -a`: each assignment is
exported to the harness); `harness ci systemd` names it as the service's
`EnvironmentFile=`. Both read the same `NAME='value'` lines, so one file serves both. No
generator ever reads or writes a value: it names the file and the variables, and says
which of them the file lacks. `harness doctor` reports the same.
"""

from __future__ import annotations

import re
import shlex
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import InvalidInput
from harness.loop.control import CONFIG_PATH
from harness.model.config import Config
from harness.trust.secret import default_secret_file

ENV_FILE_NAME = "notify.env"
# What both cron's sh and systemd's EnvironmentFile= read as an assignment (no `export`).
_ASSIGNED = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)=", re.M)
MAX_ENV_FILE_BYTES = 64 * 1024


@dataclass(frozen=True)
class NotifyEnv:
    names: tuple[str, ...]  # what the notifier reads: the webhook's $NAME, notify.env
    file: Path  # where a scheduled run reads their values from

    def notes(self) -> list[str]:
        """What is wrong with the file as it stands (nothing: ready)."""
        listed = ", ".join(self.names)
        if not self.file.is_file():
            return [
                f"{self.file} does not exist yet: write {listed} into it as NAME='value' "
                f"lines (chmod 600); {CONFIG_PATH} notify reads them"
            ]
        notes = []
        missing = [name for name in self.names if name not in self.assigned()]
        if missing:
            notes.append(f"{self.file} sets no {', '.join(missing)}: add NAME='value' lines")
        if self.file.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            notes.append(f"{self.file} can be read by others: chmod 600 {self.file}")
        return notes

    def assigned(self) -> set[str]:
        try:
            with self.file.open("rb") as handle:
                text = handle.read(MAX_ENV_FILE_BYTES).decode("utf-8", "replace")
        except OSError:
            return set()
        return set(_ASSIGNED.findall(text))

    def cron_words(self) -> str:
        """The crontab line's part before PATH=: the file's assignments exported, when it
        can be read (a missing file leaves the run going; its notifications then fail
        and say which variable is unset, notify.md)."""
        quoted = shlex.quote(str(self.file))
        return f"set -a && {{ [ ! -r {quoted} ] || . {quoted}; }} && set +a && "

    def comment(self) -> str:
        return f"notify ({CONFIG_PATH}) reads {', '.join(self.names)} from {self.file}"


def notify_env(
    config: Config, root: Path, env: Mapping[str, str], chosen: Path | None
) -> NotifyEnv | None:
    """The notifier's variables and their file (`chosen`, else notify.env beside the default
    secret file); None when the config names none. A file inside the repository is
    refused: its values are credentials and would be one `git add` from a commit."""
    names = config.notify_variables()
    if not names:
        return None
    file = chosen.expanduser() if chosen else default_secret_file(env).parent / ENV_FILE_NAME
    file = file.absolute()
    if file.resolve().is_relative_to(root.resolve()):
        raise InvalidInput(
            f"--env-file: {file} is inside the repository (expected a file outside it, "
            f"e.g. {default_secret_file(env).parent / ENV_FILE_NAME}: it holds credentials)"
        )
    return NotifyEnv(names, file)
