"""What a generated workflow installs as the harness: bytes fixed before the job runs.

The job that installs it holds `contents: write` and the secret, so a name resolved on an
index at run time (`goal-harness==0.1.0`, a name anyone can publish under while it is
unpublished, and a version whose files an index can add to) is not offered. Two forms are:

- a git URL at a full commit, `git+https://…/goal-harness@<40 hex>`: the default when this
  harness was itself installed that way (pip's `direct_url.json`, PEP 610, names the
  commit), else given with `--install`;
- a requirements file in the repository, `--install requirements/harness.txt`, installed
  with `pip install --require-hashes`: every package, the harness's dependencies too, by
  hash.

Why, and what each leaves to the index: docs/specs/cli.md, docs/guide/scheduling.md.
"""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path, PurePosixPath

from harness.errors import InvalidInput

DISTRIBUTION = "goal-harness"
# The URL, one shell word inside double quotes in a YAML plain scalar: nothing that could
# end either, and the commit in full (a tag or a branch can be moved to other code).
_GIT_AT_COMMIT = re.compile(
    r"git\+https://[A-Za-z0-9._~/:%+-]+@[0-9a-f]{40}(#[A-Za-z0-9._=&-]+)?", re.ASCII
)
_REQUIREMENTS = re.compile(r"[A-Za-z0-9._/-]+\.txt", re.ASCII)
_COMMIT = re.compile(r"[0-9a-f]{40}", re.ASCII)
EXPECTED = (
    "expected a git URL at a full commit, such as "
    "git+https://github.com/<owner>/goal-harness@<40-hex commit>, or a requirements file "
    "with hashes in this repository, such as requirements/harness.txt"
)


def install_command(install: str | None, root: Path, direct_url: str | None = None) -> str:
    """The workflow's `run:` line that installs the harness (`direct_url`: this harness's
    own PEP 610 record, read from its installed metadata when not given)."""
    if install is None:
        record = own_direct_url() if direct_url is None else direct_url
        install = source_at_commit(record)
        if install is None:
            raise InvalidInput(
                "--install: not given, and this harness was not installed from a git "
                f"repository at a known commit ({EXPECTED})"
            )
    if _GIT_AT_COMMIT.fullmatch(install):
        return f'python -m pip install "{install}"'
    if _REQUIREMENTS.fullmatch(install) and ".." not in PurePosixPath(install).parts:
        if not (root / install).is_file():
            raise InvalidInput(f"--install: {install}: no such file in {root} ({EXPECTED})")
        return f'python -m pip install --require-hashes -r "{install}"'
    raise InvalidInput(f"--install: {install!r} is not a pinned install spec ({EXPECTED})")


def own_direct_url() -> str | None:
    try:
        return metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None


def source_at_commit(direct_url: str | None) -> str | None:
    """`git+<url>@<commit>` for a harness pip installed from git, else None (an index, a
    wheel, a local folder: nothing a runner could fetch again by commit)."""
    try:
        record = json.loads(direct_url or "null")
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("vcs_info"), dict):
        return None
    vcs, url = record["vcs_info"], record.get("url")
    commit, sub = vcs.get("commit_id"), record.get("subdirectory")
    if vcs.get("vcs") != "git" or not isinstance(url, str) or not isinstance(commit, str):
        return None
    if not url.startswith("https://") or not _COMMIT.fullmatch(commit):
        return None
    spec = f"git+{url}@{commit}" + (f"#subdirectory={sub}" if isinstance(sub, str) else "")
    return spec if _GIT_AT_COMMIT.fullmatch(spec) else None
