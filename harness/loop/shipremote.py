"""Why a contained ship step's push failed, when the reason is the sandbox: a remote that
is a path on the runner's disk (a bare repository beside the checkout, a mounted share)
lies in a folder the sandbox hides (`/tmp`, the runner's home), so git in the step reads
"does not appear to be a git repository". The ship_failed gate's detail names the remote,
its path and the `sandbox_binds` line that shows it (goal-file.md, "ship")."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness.loop.contain.place import Place
from harness.loop.contain.reach import hidden_folders
from harness.loop.contain.sandbox import Sandbox
from harness.store.gitrepo import run_git


def path_remotes(repo_root: Path) -> dict[str, Path]:
    """Remote name -> the local path its URL names (`/srv/git/app.git`, `file:///…`); remotes
    reached over a network are left out."""
    proc = run_git(["config", "--get-regexp", r"^remote\..*\.url$"], repo_root, check=False)
    found: dict[str, Path] = {}
    for entry in proc.stdout.decode("utf-8", "replace").splitlines():
        key, _, url = entry.partition(" ")
        name = key.removeprefix("remote.").removesuffix(".url")
        local = url.removeprefix("file://")
        if local.startswith("/"):
            found[name] = Path(local)
    return found


def sandbox_hint(
    repo_root: Path, sandbox: Sandbox, place: Place, network: bool
) -> Callable[[], str]:
    """What to add to a failed ship step's detail (computed only when it failed): each
    path remote the sandbox hides from the step, with the fix; "" when none is hidden."""

    def hint() -> str:
        remotes = path_remotes(repo_root)
        shut = set(hidden_folders(sandbox, place, list(remotes.values()), network))
        said = [
            f"the sandbox hides remote {name}'s path {path} from the ship step: add "
            f"`rw:{path}` to sandbox_binds in .harness/config.yaml (or push to a URL)"
            for name, path in sorted(remotes.items())
            if path in shut
        ]
        return "; ".join(said)

    return hint
