"""Loading a goal: verify the ledger, check the cell against it, roll forward.

Checks, in order (design, "Loading a goal"): every ledger line's MAC, sequence and chain;
the committed part untouched (no committed line cut or changed, the committed cell naming
the committed head); the working cell's MAC and its position on the chain, no older than
the committed one. Events after the cell's position are a crash between append and cell
write: they are MAC'd, so they are rolled forward. Anything else refuses with exit 3 and
leaves every byte as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from harness.errors import TrustFailure
from harness.record.cell import Cell, parse_cell
from harness.record.fold import apply
from harness.record.ledger import Ledger, Record, TornTail
from harness.record.position import START, Position
from harness.record.render import MarkdownReport
from harness.store.fsutil import refuse_link
from harness.store.gitenv import git_reason, named_objects
from harness.store.gitrepo import run_git
from harness.store.headlog import previous_checkpoint


@dataclass(frozen=True)
class GoalPaths:
    """Where one goal's harness-owned files live, below a checkout `root`."""

    root: Path
    goal_id: str

    @property
    def rel(self) -> str:
        return f"ledger/{self.goal_id}"

    @property
    def folder(self) -> Path:
        return self.root / "ledger" / self.goal_id

    @property
    def events(self) -> Path:
        return self.folder / "events"

    @property
    def cell(self) -> Path:
        return self.folder / "state.json"

    @property
    def report(self) -> Path:
        return self.folder / "report.md"

    @property
    def checkpoint(self) -> Path:
        """The runner's signature over the last checkpoint (trust/checkpoint.py)."""
        return self.folder / "checkpoint.sig"

    def refuse_links(self) -> None:
        """`ledger/`, the goal's folder, its events folder and its files are not links."""
        for path in (
            self.root / "ledger",
            self.folder,
            self.events,
            self.cell,
            self.report,
            self.checkpoint,
        ):
            refuse_link(path)
        if self.events.is_dir():
            for segment in self.events.iterdir():
                refuse_link(segment)


@dataclass(frozen=True)
class Committed:
    """The goal's files as the checkout's HEAD commit holds them."""

    cell: bytes | None
    sizes: dict[str, int] = field(default_factory=dict)
    previous: bytes | None = None  # the cell as the commit before its last change held it


def committed_view(paths: GoalPaths, ref: str = "HEAD", history: bool = True) -> Committed | None:
    """None when `root` is not a git checkout with a commit. `history`: also read the cell's
    previous committed version (a goal branch only ever moves forward)."""
    listing = run_git(["ls-tree", "-l", "-r", ref, "--", f"{paths.rel}/"], paths.root, check=False)
    if listing.returncode != 0:
        _check_head_readable(paths, ref, listing.stderr)
        return None
    sizes: dict[str, int] = {}
    cell = None
    for row in listing.stdout.decode("utf-8", "replace").splitlines():
        meta, _, name = row.partition("\t")
        kind, obj, size = meta.split()[1:4]
        if kind == "blob" and not size.isdigit():  # `-` for a missing or empty object file
            raise TrustFailure(
                f"{paths.root}: git object {obj} ({name}) of the head commit cannot be read "
                f"(git gives its size as {size!r}); {SAFE_ADVICE}"
            )
        if name == f"{paths.rel}/state.json":
            cell = run_git(["cat-file", "blob", obj], paths.root).stdout
        elif name.startswith(f"{paths.rel}/events/") and kind == "blob":
            sizes[name.rsplit("/", 1)[1]] = int(size)
    return Committed(cell, sizes, _previous_cell(paths, ref) if history else None)


# What to do when git cannot read an object a goal's record needs (remote.md, "Objects
# pruned during a run"): the first part where the record was read from a worktree.
FETCH_ADVICE = (
    "fetch the goal branch from the remote or another clone, or run `git fsck` to see what was lost"
)
SAFE_ADVICE = (
    "the worktree and its uncommitted events are intact: do not remove it; an object a "
    "`git gc --prune=now` beside a run removed is written again from the worktree by "
    f"`harness run` while its files still hold it; else {FETCH_ADVICE}"
)


def _put_back(root: Path, head: str) -> str:
    """For a head commit that is itself lost (pruned beside a run): the checkpoint before
    it, which the worktree's events extend, and how to put the branch back on it."""
    if run_git(["cat-file", "-e", head], root, check=False).returncode == 0:
        return ""  # the commit is there; its tree or a blob is not
    back = previous_checkpoint(root, head)
    if back is None:
        return ""
    return (
        f"the checkpoint before it, {back}, is intact: `git -C {root} update-ref HEAD {back}` "
        "puts the branch back on it and the next `harness run` rolls the worktree's events "
        "forward onto it; "
    )


def _check_head_readable(paths: GoalPaths, ref: str, stderr: bytes) -> None:
    """A checkout whose HEAD names a commit (or branch) git cannot read is refused, never
    taken for one with no commit: a power cut can leave a ref file or an object empty."""
    if ref != "HEAD":
        return
    if run_git(["rev-parse", "--git-dir"], paths.root, check=False).returncode != 0:
        return  # not a git checkout at all
    head = run_git(["rev-parse", "-q", "--verify", "HEAD"], paths.root, check=False)
    sha = head.stdout.decode().strip()
    if sha:
        named = [oid for oid in named_objects(stderr) if oid != sha]
        broken = f" (git object {named[0]})" if named else ""
        raise TrustFailure(
            f"{paths.root}: the head commit {sha} (or its tree) cannot be read{broken}: "
            f"{git_reason(stderr)}; {_put_back(paths.root, sha)}{SAFE_ADVICE}"
        )
    if run_git(["symbolic-ref", "-q", "HEAD"], paths.root, check=False).returncode != 0:
        raise TrustFailure(
            f"{paths.root}: HEAD names a branch whose ref is empty or broken; {SAFE_ADVICE}"
        )


def _previous_cell(paths: GoalPaths, ref: str) -> bytes | None:
    """The committed cell before its latest change, to catch a newer cell committed over
    with an older one (a rollback made as a new commit)."""
    log = run_git(
        ["log", "-2", "--first-parent", "--format=%H", ref, "--", f"{paths.rel}/state.json"],
        paths.root,
        check=False,
    )
    commits = log.stdout.decode().split()
    if log.returncode != 0 or len(commits) < 2:
        return None
    blob = run_git(
        ["cat-file", "blob", f"{commits[1]}:{paths.rel}/state.json"], paths.root, check=False
    )
    return blob.stdout if blob.returncode == 0 else None


@dataclass
class Loaded:
    cell: Cell
    ledger: Ledger
    report: MarkdownReport
    torn: TornTail | None
    rolled_forward: int
    events: int


def _refuse(paths: GoalPaths, problem: str) -> TrustFailure:
    return TrustFailure(f"{paths.rel}/state.json: {problem}")


class _Scan:
    """Folds records while tracking where the committed part ends and the cell sits."""

    def __init__(
        self,
        paths: GoalPaths,
        committed: Committed | None,
        working: Cell | None,
        earlier: Position,
        full_fold: bool,
    ) -> None:
        cell_at = working.position if working else START
        self.paths = paths
        self.working = working
        self.full_fold = full_fold
        self.sizes = committed.sizes if committed else {}
        self.cell_at = cell_at
        self.earlier = earlier
        self.last_committed: Record | None = None
        self.fold = Cell(goal=paths.goal_id)
        self.at_cell: Cell | None = self.fold if cell_at == START else None

    @property
    def committed_head(self) -> Position:
        last = self.last_committed
        return START if last is None else Position(last.event.seq, last.hash)

    def add(self, record: Record) -> None:
        # Called once per event (a million times for a long-lived goal): positions are
        # built only where one is needed, and the two named events take the slow branch.
        seq = record.event.seq
        if self.full_fold or seq > self.cell_at.seq:
            self.fold = apply(self.fold, record.event, Position(seq, record.hash))
        if record.end <= self.sizes.get(record.segment, -1):
            self.last_committed = record
        if seq == self.earlier.seq or seq == self.cell_at.seq:
            self._named(record)

    def _named(self, record: Record) -> None:
        """Checks at the events an earlier committed cell and the working cell name."""
        position = Position(record.event.seq, record.hash)
        if position.seq == self.earlier.seq and position.hash != self.earlier.hash:
            raise _refuse(
                self.paths,
                f"an earlier committed cell names event {position.seq} with a hash that is not on the chain",
            )
        if position.seq == self.cell_at.seq:
            if position.hash != self.cell_at.hash:
                raise _refuse(
                    self.paths,
                    f"the cell names event {position.seq} with a hash that is not on the chain",
                )
            if not self.full_fold and self.working is not None:
                # The cell's MAC vouches for its fields: fold on from it (harness verify).
                self.fold = self.working
            self.at_cell = self.fold


def _check_cut(paths: GoalPaths, ledger: Ledger, committed: Committed | None) -> None:
    if committed is None:
        return
    present = {p.name: p.stat().st_size for p in ledger.segments()}
    for name, size in sorted(committed.sizes.items()):
        if present.get(name, 0) < size:
            raise TrustFailure(
                f"{paths.rel}/events/{name}: shorter than committed ({present.get(name, 0)} < {size} bytes): "
                "committed events were cut"
            )


def load(
    paths: GoalPaths,
    key: bytes,
    committed: Committed | None,
    *,
    repair: bool,
    report: bool = True,
    full_fold: bool = True,
    on_record: Callable[[Record], None] | None = None,
) -> Loaded:
    source = f"{paths.rel}/state.json"
    paths.refuse_links()
    working = _read_cell(paths, source, key)
    ledger = Ledger(paths.events, paths.goal_id, key)
    earlier = _earlier_position(paths, key, committed, source)
    scan = _Scan(paths, committed, working, earlier, full_fold)
    rendered = MarkdownReport(paths.goal_id)
    add = scan.add
    for record in ledger.records():
        add(record)
        if report:  # only a run writes report.md; verify needs no rendering
            rendered.add(record.event)
        if on_record is not None:
            on_record(record)
    _check_cut(paths, ledger, committed)
    _check_committed_cell(paths, key, committed, scan.committed_head, source)
    if earlier.seq > scan.committed_head.seq:
        raise _refuse(
            paths,
            f"an earlier commit holds a cell at event {earlier.seq} but the committed ledger ends at "
            f"{scan.committed_head.seq}: an older ledger was committed over a newer one (rollback)",
        )
    _check_working_cell(paths, working, scan, ledger.head)
    torn = ledger.torn
    if torn is not None and repair:
        if torn.offset < scan.sizes.get(torn.path.name, -1):
            raise TrustFailure(f"{torn.path}: a committed line is damaged")
        ledger.cut_torn_tail()
    behind = ledger.head.seq - (working.position.seq if working else 0)
    # Sequences run from 1 without a gap (each line was checked), so the head is the count.
    # The tree is the checkpoint's evidence, not a fold of the ledger: carry it over.
    cell = replace(scan.fold, tree=working.tree) if working is not None else scan.fold
    return Loaded(cell, ledger, rendered, torn, behind, ledger.head.seq)


def _earlier_position(
    paths: GoalPaths, key: bytes, committed: Committed | None, source: str
) -> Position:
    if committed is None or committed.previous is None:
        return START
    earlier = parse_cell(committed.previous, f"{source} (earlier commit)", paths.goal_id, key)
    return earlier.position


def _read_cell(paths: GoalPaths, source: str, key: bytes) -> Cell | None:
    try:
        data = paths.cell.read_bytes()
    except FileNotFoundError:
        return None
    return parse_cell(data, source, paths.goal_id, key)


def _check_committed_cell(
    paths: GoalPaths, key: bytes, committed: Committed | None, head: Position, source: str
) -> None:
    if committed is None:
        return
    if committed.cell is None:
        if head.seq:
            raise _refuse(
                paths, f"events up to {head.seq} are committed but the commit holds no cell"
            )
        return
    cell = parse_cell(committed.cell, f"{source} (committed)", paths.goal_id, key)
    if cell.position != head:
        raise _refuse(
            paths,
            f"the committed cell names event {cell.position.seq} but the committed ledger ends at {head.seq}",
        )


def _check_working_cell(
    paths: GoalPaths, working: Cell | None, scan: _Scan, head: Position
) -> None:
    at = working.position if working else START
    if working is None and scan.committed_head.seq:
        raise _refuse(
            paths, f"the cell is missing while events up to {scan.committed_head.seq} are committed"
        )
    if at.seq > head.seq:
        raise _refuse(
            paths,
            f"the cell names event {at.seq} but the ledger ends at {head.seq}: the ledger was cut",
        )
    if at.seq < scan.committed_head.seq:
        raise _refuse(
            paths,
            f"the cell names event {at.seq} but events up to {scan.committed_head.seq} are committed: "
            "an older cell was put back (rollback)",
        )
    folded = scan.at_cell
    if folded is not None and working is not None:
        folded = replace(folded, tree=working.tree)  # the tree is not folded (cell.md)
        if working.advanced_at is None:
            # Written before cells kept the time of their last event: that field alone
            # is not compared; the next cell this harness writes carries it (cell.md).
            folded = replace(folded, advanced_at=None)
        if working.rule_counts is None:
            # Written before the owner rules' counts were kept: the same exception.
            folded = replace(folded, rule_counts=None)
        if working.run_due_at is None:
            # Written before a recurring goal's run kept when it was due: the same again.
            folded = replace(folded, run_due_at=None)
    if working is not None and folded != working:
        raise _refuse(paths, f"the cell does not match the ledger folded up to event {at.seq}")
