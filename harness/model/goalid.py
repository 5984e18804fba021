"""Goal ids and the goal files' names: what a command checks before any goal file is
parsed, kept apart from `model.goal` so that a run whose goals all rest (and `status`)
never imports the goal file's parser and its records.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness.errors import invalid
from harness.model.cache import ParsedCache
from harness.model.wording import show_value

GOAL_ID_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
PLAIN_NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,100}")
GOAL_ID_EXPECTED = "1 to 63 lowercase letters, digits or '-', starting with a letter or digit"
MAX_GOAL_FILE_BYTES = 256 * 1024
SCHEMA = "goal.schema.json"


def stray_goal_note(name: str, is_folder: bool) -> str | None:
    """The note for an entry of `goals/` that looks meant as a goal but is never read as
    one: a subfolder (goals sit directly in `goals/`) or a `.yml` file (the suffix is
    `.yaml`). Anything else there (a README) is no goal and needs no note."""
    # A name may hold a newline or a terminal escape: shown quoted unless it is plain.
    shown = name if PLAIN_NAME_RE.fullmatch(name) else show_value(name)
    if is_folder:
        return f"goals/{shown}/: ignored (goal files sit directly in goals/, not in a subfolder)"
    if name.endswith(".yml"):
        return (
            f"goals/{shown}: ignored (a goal file's name ends in .yaml: rename it"
            f" goals/{shown[: -len('.yml')]}.yaml)"
        )
    return None


def goal_source(goal_id: str) -> str:
    """`goals/<id>.yaml` as a message names it. A name that is not a goal id is shown quoted
    and escaped: a file name may hold a newline or a terminal escape, and no message may
    print a line of its own."""
    if GOAL_ID_RE.fullmatch(goal_id):
        return f"goals/{goal_id}.yaml"
    return f"goals/{show_value(goal_id + '.yaml')}"


def check_goal_id(goal_id: str, source: str) -> str:
    """The id itself when it is a valid goal id; InvalidInput naming the problem otherwise."""
    # fullmatch: with search or match, "$" would accept a trailing newline.
    if GOAL_ID_RE.fullmatch(goal_id):
        return goal_id
    if not goal_id:
        problem = "goal id is empty"
    elif len(goal_id) > 63:
        problem = f"goal id is {len(goal_id)} characters long"
    else:
        problem = f"{show_value(goal_id)} is not a valid goal id"
    raise invalid(source, "id", problem, GOAL_ID_EXPECTED)


def goal_cache(folder: Path, key: bytes) -> ParsedCache:
    """Goal files validated before, in `folder` (model/cache.py): enough for the goals a
    busy repository's runs move (a goal at rest is never parsed)."""
    return ParsedCache(folder, key, "goal", SCHEMA, 4 * MAX_GOAL_FILE_BYTES, keep=256)
