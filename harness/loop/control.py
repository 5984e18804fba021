"""The human-owned files, read from the control ref, never from a goal's worktree."""

from __future__ import annotations

import hashlib
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from harness.errors import InvalidInput, TrustFailure
from harness.model.cache import ParsedCache
from harness.model.config import Config, config_cache, parse_config
from harness.model.goalid import GOAL_ID_RE, check_goal_id, goal_cache, stray_goal_note
from harness.store.gitrepo import Repo
from harness.store.objects import ObjectReader, read_blobs
from harness.trust.approvals import SignedRecord, Verdict, find_run_approval, parse_approval_file
from harness.trust.owners import Owner, parse_owners
from harness.trust.runners import RUNNERS_PATH, RUNNERS_SIG_PATH, check_runners

if TYPE_CHECKING:
    from harness.model.goal import Goal
    from harness.model.lessons import Lesson
    from harness.record.cell import Cell
    from harness.trust.secret import Secret

CONFIG_PATH = ".harness/config.yaml"
OWNERS_PATH = ".harness/owners"


T = TypeVar("T")


@dataclass(frozen=True)
class Control:
    repo: Repo
    ref: str  # the ref as named (e.g. refs/heads/main)
    commit: str  # what it pointed at when read
    config: Config
    owners_text: bytes | None
    objects: ObjectReader = field(compare=False, repr=False)
    # Goal files validated before (model/cache.py); None without the secret.
    goal_cache: ParsedCache | None = field(default=None, compare=False, repr=False)
    # Everything here is read at one fixed commit, so what is parsed once stays true.
    _memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def _once(self, key: str, make: Callable[[], T]) -> T:
        if key not in self._memo:
            self._memo[key] = make()
        return cast(T, self._memo[key])

    def branch(self, goal_id: str) -> str:
        """The goal's branch: the config's prefix and the id (`harness/<id>` by default)."""
        return f"{self.config.branch_prefix}{goal_id}"

    @property
    def owners_sha256(self) -> str:
        return hashlib.sha256(self.owners_text or b"").hexdigest()

    def owners_moved(self, cell: Cell) -> bool:
        """A started goal is pinned to the owners file it started under; a change to it
        blocks the goal (`owners_changed`) until a pinned owner signs `rotate-owners`."""
        return cell.goal_sha256 is not None and cell.owners_sha256 != self.owners_sha256

    def owners(self) -> tuple[Owner, ...]:
        """The owners; fail closed when there are none (nobody could have approved)."""
        return self._once("owners", self._parse_owners)

    def _parse_owners(self) -> tuple[Owner, ...]:
        if self.owners_text is None:
            raise TrustFailure(
                f"{OWNERS_PATH}: missing on {self.ref}: nobody can approve a goal "
                "(run `harness init --owner P --key PUBKEY` and commit)"
            )
        try:
            return parse_owners(self.owners_text.decode("utf-8", "replace"), OWNERS_PATH)
        except InvalidInput as exc:
            # The trust root itself is unreadable: fail closed.
            raise TrustFailure(f"{exc}; nothing runs until .harness/owners is fixed") from None

    def goal_ids(self) -> list[str]:
        """The goals on the control ref: `goals/<id>.yaml` files named by a valid id."""
        return list(self._goal_set())

    def has_goal(self, goal_id: str) -> bool:
        """Whether `goals/<id>.yaml` is on the control ref (a set: `status` asks per goal)."""
        return goal_id in self._goal_set()

    def _goal_set(self) -> dict[str, None]:
        """The goal ids, in order, once per Control (an ordered set)."""
        return self._once(
            "goal_ids",
            lambda: dict.fromkeys(s for s in self._goal_stems() if GOAL_ID_RE.fullmatch(s)),
        )

    def misnamed_goal_files(self) -> list[str]:
        """Stems of `goals/*.yaml` files whose names are not goal ids: never goals."""
        return [stem for stem in self._goal_stems() if not GOAL_ID_RE.fullmatch(stem)]

    def stray_goal_notes(self) -> list[str]:
        """Notes for `goals/` entries on the control ref that are never read as goals."""
        notes = []
        for name in self.objects.names(f"{self.commit}:goals"):
            if name.endswith((".yaml", ".approval")):
                continue  # goal files and their approvals: no object read for those
            found = self.objects.read(f"{self.commit}:goals/{name}")
            note = stray_goal_note(name, found is not None and found[1] == "tree")
            if note is not None:
                notes.append(note)
        return notes

    def not_managed(self) -> InvalidInput | None:
        """Where nothing can be checked: the control ref has no owners file, so this is not
        a repository the harness manages (a cron line's wrong `cd` must not look green)."""
        if self.owners_text is not None:
            return None
        return InvalidInput(
            f"{self.repo.root}: not a harness repository ({self.ref} has no {OWNERS_PATH});"
            " nothing to check (run `harness init --owner P --key PUBKEY` and commit, or run"
            " in the repository the harness manages)"
        )

    def _goal_stems(self) -> list[str]:
        return self._once("goal_stems", self._read_goal_stems)

    def _read_goal_stems(self) -> list[str]:
        names = self.objects.names(f"{self.commit}:goals")
        return sorted(n[: -len(".yaml")] for n in names if n.endswith(".yaml"))

    def prefetch_goal_files(self, goal_ids: Sequence[str]) -> None:
        """Read the goal files and approval files of `goal_ids` through one `cat-file
        --batch` by object id (status over thousands of goals: a `<commit>:<path>` request
        per file would search the `goals` tree once per file), for goal_bytes and approvals."""
        listed = self.objects.entries(f"{self.commit}:goals")
        names = [f"{g}.{ext}" for g in goal_ids for ext in ("yaml", "approval")]
        present = [n for n in names if listed.get(n, ("40000", ""))[0] not in ("40000", "160000")]
        blobs = read_blobs(self.repo.root, [listed[name][1] for name in present])
        found = dict(zip(present, blobs, strict=True))
        for name in names:
            self._memo[f"blob:goals/{name}"] = found.get(name)

    def _blob(self, path: str) -> bytes | None:
        key = f"blob:{path}"
        if key in self._memo:
            return cast("bytes | None", self._memo[key])
        return self.objects.blob(f"{self.commit}:{path}")

    def goal_bytes(self, goal_id: str) -> bytes:
        check_goal_id(goal_id, "goal id")
        data = self._blob(f"goals/{goal_id}.yaml")
        if data is None:
            raise InvalidInput(
                f"goals/{goal_id}.yaml: no such goal on {self.ref} (commit the goal file first)"
            )
        return data

    def goal(self, goal_id: str, principals: set[str] | None = None) -> Goal:
        from harness.model.goal import read_goal  # the parser, only for a goal that moves

        source = f"goals/{goal_id}.yaml"
        data, defaults = self.goal_bytes(goal_id), self.config.defaults
        goal, parsed = read_goal(data, source, goal_id, defaults, principals, self.goal_cache)
        if parsed is not None:
            self._memo[f"unvouched:{goal_id}"] = (data, parsed)
        return goal

    def vouch_goal(self, goal_id: str) -> None:
        """Remember the goal file's schema-checked mapping (model/cache.py) once the goal
        is loaded and bound and its run approval verified, as it starts or moves on
        (`advance._move_on`): an unapproved, edited or refused goal file, or a run that
        only gated it, leaves nothing behind."""
        parsed = self._memo.pop(f"unvouched:{goal_id}", None)
        if parsed is None or self.goal_cache is None:
            return
        data, raw = parsed
        if self._memo.get(f"approved:{goal_id}") == hashlib.sha256(data).hexdigest():
            self.goal_cache.remember(data, raw)

    def approvals(self, goal_id: str) -> tuple[SignedRecord, ...]:
        return self._once(f"approvals:{goal_id}", lambda: self._read_approvals(goal_id))

    def _read_approvals(self, goal_id: str) -> tuple[SignedRecord, ...]:
        source = f"goals/{goal_id}.approval"
        data = self._blob(source)
        if data is None:
            return ()
        return parse_approval_file(data.decode("utf-8", "replace"), source)

    def run_approval(self, goal: Goal) -> Verdict:
        verdict = find_run_approval(
            self.approvals(goal.id),
            self.owners(),
            goal.id,
            goal.sha256,
            f"goals/{goal.id}.approval",
        )
        self._memo[f"approved:{goal.id}"] = goal.sha256
        return verdict

    def owners_at(self, commit: str | None, sha256: str | None) -> tuple[Owner, ...]:
        """The owners file a goal is pinned to, read from history and checked by its hash."""
        data = self.objects.blob(f"{commit}:{OWNERS_PATH}") if commit else None
        if data is None or hashlib.sha256(data).hexdigest() != sha256:
            raise TrustFailure(
                f"{OWNERS_PATH}: the owners file this goal is pinned to (commit {commit}) "
                "cannot be read back with its recorded SHA-256; refusing to accept a new one"
            )
        return parse_owners(data.decode("utf-8", "replace"), f"{OWNERS_PATH}@{commit}")

    def lessons(self) -> tuple[Lesson, ...]:
        """The team's lessons on the control ref (`lessons/*.yaml`); a bad one is exit 2."""
        from harness.model.lessons import LESSONS_DIR, load_lessons

        names = [
            n for n in self.objects.names(f"{self.commit}:{LESSONS_DIR}") if n.endswith(".yaml")
        ]
        files = {}
        for name in names:
            data = self.objects.blob(f"{self.commit}:{LESSONS_DIR}/{name}")
            if data is not None:
                files[name[: -len(".yaml")]] = data
        return load_lessons(files)

    def principals(self) -> set[str]:
        return {p for owner in self.owners() for p in owner.principals}

    def listed_runner_keys(self) -> frozenset[bytes] | None:
        """The keys `.harness/runners` lists, parsed without checking the owners' signature
        over it (`runners` does, before anything is written); None where there is none."""
        data = self._blob(RUNNERS_PATH)
        if data is None:
            return None
        try:
            listed = parse_owners(data.decode("utf-8", "replace"), RUNNERS_PATH)
        except InvalidInput:
            return frozenset()
        return frozenset(runner.key_blob for runner in listed)

    def runners(self) -> tuple[Owner, ...] | None:
        """The runners whose signed checkpoints a clone trusts, from the owner-signed
        `.harness/runners` (trust/runners.py); None where the owners list none (then
        checkpoints are not signed, and a clone without the secret reads unverified).
        A file there that no owner signed is exit 3: nothing it lists is trusted."""
        return self._once("runners", self._read_runners)

    def _read_runners(self) -> tuple[Owner, ...] | None:
        data = self._blob(RUNNERS_PATH)
        if data is None:
            return None
        return check_runners(data, self._blob(RUNNERS_SIG_PATH), self.owners())


def open_control(repo: Repo, secret: Secret | None = None) -> Control:
    """Read config and owners from the control ref (config's `control_ref` wins).

    All of it comes through one `git cat-file --batch` process, which the Control keeps
    for the goal files and approvals read later and ends when it is collected. Given the
    secret, a config or goal file validated before is taken from the machine's cache
    (model/cache.py).
    """
    # Not repo.harness_dir(), which creates the folder: verify and replay must work where
    # .git cannot be written (the cache is written only if it can be).
    folder = repo.common_dir / "harness" / "cache"
    cache = None if secret is None else config_cache(folder, secret.cache_key())
    goals = None if secret is None else goal_cache(folder, secret.cache_key())
    objects = ObjectReader(repo.root)
    try:
        default_ref = repo.checked_out_ref()
        commit = objects.commit_id(default_ref)
        if commit is None:
            raise repo.missing_commit(default_ref)
        config = parse_config(objects.blob(f"{commit}:{CONFIG_PATH}"), CONFIG_PATH, cache)
        ref = default_ref
        if config.control_ref:
            ref = config.control_ref
            resolved = objects.commit_id(ref)
            if resolved is None:
                raise InvalidInput(f"{CONFIG_PATH}: control_ref: {ref!r} does not name a commit")
            commit = resolved
            config = parse_config(objects.blob(f"{commit}:{CONFIG_PATH}"), CONFIG_PATH, cache)
        owners = objects.blob(f"{commit}:{OWNERS_PATH}")
        control = Control(repo, ref, commit, config, owners, objects, goals)
    except BaseException:
        objects.close()
        raise
    weakref.finalize(control, objects.close)
    return control
