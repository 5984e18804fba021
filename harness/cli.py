"""The command line: parse, resolve paths, call `harness.commands.<name>`, exit with its code.

Imports of the command modules happen inside each command, so `harness run` pays only for
what it uses.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

import click

from harness import __version__
from harness.cli_ci import ci
from harness.entry import RUN_OPTIONS
from harness.group import HELD as _HELD
from harness.group import JSON as _JSON
from harness.group import F, HarnessGroup, emit
from harness.group import cwd as _cwd
from harness.group import done as _done
from harness.group import env as _env
from harness.group import path_option as _path_option

# approve, ship and unpark all sign with an owner's private key.
_OWNER_KEY = _path_option("--key", "key", "An owner's ssh-ed25519 private key file.", True)


@click.group(cls=HarnessGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="harness")
def cli() -> None:
    """goal-harness: run coding agents unattended, safely, with a record in git.

    \b
    Example:
      harness init --owner alice@example.com --key ~/.ssh/id_ed25519.pub
      harness new fix-login && harness approve fix-login --key ~/.ssh/id_ed25519
      harness run
    """


@cli.command()
@click.option("--owner", help="Principal to list in .harness/owners, e.g. alice@example.com.")
@click.option("--key", help="That owner's ssh-ed25519 public key, or the path of its .pub file.")
def init(owner: str | None, key: str | None) -> None:
    """Create .harness/, goals/, ledger/ and the git-ignore line.

    Example: harness init --owner alice@example.com --key ~/.ssh/id_ed25519.pub
    """
    from harness.commands.init import init as run_init

    _done(run_init(_cwd(), owner, key, sys.stdout))


@cli.group(cls=HarnessGroup)
def secret() -> None:
    """Manage the repository secret (kept outside the repository)."""


@secret.command("new")
@_path_option("--file", "file", "Where to write it (mode 0600).")
@click.option(
    "--print", "print_only", is_flag=True, help="Print it instead, for a CI secret store."
)
@click.option("--force", is_flag=True, help="Even in a clone holding records made elsewhere.")
def secret_new(file: Path | None, print_only: bool, force: bool) -> None:
    """Write a new random secret outside the repository, or print it.

    Example: harness secret new --file ~/.config/goal-harness/secret
    """
    from harness.commands.secret import secret_new as run_secret_new

    _done(run_secret_new(_cwd(), file, print_only, _env(), sys.stdout, force))


@cli.group("runner-key", cls=HarnessGroup)
def runner_key() -> None:
    """This runner's SSH signing key: it signs every checkpoint the runner commits."""


@runner_key.command("new")
@_path_option("--file", "file", "Where to write it (mode 0600; default: beside the secret).")
def runner_key_new(file: Path | None) -> None:
    """Make this runner's key and print the line for .harness/runners.

    Example: harness runner-key new
    """
    from harness.commands.runners import runner_key_new as run_new

    _done(run_new(_cwd(), file, _env(), sys.stdout))


@runner_key.command("show")
def runner_key_show() -> None:
    """Print this runner's key fingerprint and its line for .harness/runners.

    Example: HARNESS_RUNNER_KEY_FILE=/etc/goal-harness/runner-key harness runner-key show
    """
    from harness.commands.runners import runner_key_show as run_show

    _done(run_show(_env(), sys.stdout))


@cli.group(cls=HarnessGroup)
def runners() -> None:
    """The runners whose signed checkpoints any clone trusts (.harness/runners)."""


@runners.command("sign")
@_OWNER_KEY
def runners_sign(key: Path) -> None:
    """Sign the checkout's .harness/runners as an owner (adds to .harness/runners.sig).

    Example: harness runners sign --key ~/.ssh/id_ed25519
    """
    from harness.commands.runners import runners_sign as run_sign

    _done(run_sign(_cwd(), key, _env(), sys.stdout))


@cli.command()
@click.argument("goal_id", required=False)
@click.option("--lesson", metavar="NAME", help="Write lessons/NAME.yaml, a lesson template.")
@click.option(
    "--agent",
    type=click.Choice(["claude", "codex", "aider", "script"]),
    default="script",
    show_default=True,
    help="Fill in this agent's usual command line and output format.",
)
def new(goal_id: str | None, lesson: str | None, agent: str) -> None:
    """Write a commented goal template to goals/<id>.yaml (or a lesson's, with --lesson).

    Example: harness new fix-login-timeout --agent claude
    """
    from harness.commands.new import new as run_new

    _done(run_new(_cwd(), goal_id, sys.stdout, agent, lesson))


@cli.command()
@click.argument("goal_ids", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
def check(goal_ids: tuple[str, ...], as_json: bool) -> None:
    """Validate goals, approvals and owners in the checkout; one line per problem.

    Example: harness check fix-login-timeout
    """
    from harness.commands.check import check as run_check

    _done(run_check(_cwd(), list(goal_ids), sys.stdout, as_json))


@cli.command()
@click.argument("goal_id")
@_OWNER_KEY
@click.option("--push", metavar="REMOTE", help="Commit the goal file and approval, push them.")
@_JSON
def approve(goal_id: str, key: Path, push: str | None, as_json: bool) -> None:
    """Sign the run decision for the goal file's current bytes.

    Example: harness approve fix-login-timeout --key ~/.ssh/id_ed25519 --push origin
    """
    from harness.commands.approve import approve as run_approve

    emit(as_json, "approve", goal_id, lambda o: run_approve(_cwd(), goal_id, key, _env(), o, push))


def _run_options(command: F) -> F:
    """run's options from entry.RUN_OPTIONS, the declaration plain_run parses them from."""
    for option in reversed(RUN_OPTIONS):
        command = click.option(option.flag, option.field, **option.click_settings())(command)
    return command


@cli.command()
@click.argument("goal_ids", nargs=-1)
@_run_options
@click.option("--serve-fd", type=int, hidden=True)  # a worker of `run --jobs` (commands/jobs.py)
def run(
    goal_ids: tuple[str, ...],
    max_steps: int | None,
    push: str | None,
    jobs: int,
    as_json: bool,
    serve_fd: int | None,
) -> None:
    """Advance every approved, runnable goal until it stops.

    Example: harness run --max-steps 20
    """
    if serve_fd is not None:
        from harness.commands.run import serve

        _done(serve(serve_fd, _cwd(), max_steps, push, _env()))
    from harness.commands.run import run as run_run

    _done(run_run(_cwd(), list(goal_ids), max_steps, push, _env(), jobs=jobs, as_json=as_json))


_DECISION_PUSH = click.option(
    "--push",
    metavar="REMOTE",
    help="Commit the decision on the control branch and push it to this remote.",
)


@cli.command()
@click.argument("goal_id")
@_OWNER_KEY
@_DECISION_PUSH
@_JSON
def ship(goal_id: str, key: Path, push: str | None, as_json: bool) -> None:
    """Sign a ship decision bound to the parked commit and ledger head; the ship step runs.

    With the secret at hand the ship step runs at once; otherwise commit
    goals/<id>.approval and the next `harness run` ships. With --push REMOTE the decision
    is committed and pushed; the next `harness run --push REMOTE` ships.

    Example: harness ship fix-login-timeout --key ~/.ssh/id_ed25519 --push origin
    """
    from harness.commands.decide import ship as run_ship

    emit(as_json, "ship", goal_id, lambda o: run_ship(_cwd(), goal_id, key, _env(), o, push))


@cli.command()
@click.argument("goal_id")
@_OWNER_KEY
@click.option(
    "--extend-budget", "extend", metavar="K=V[,K=V]", help="Raise limits, e.g. iterations=5."
)
@_DECISION_PUSH
@_JSON
def unpark(goal_id: str, key: Path, extend: str | None, push: str | None, as_json: bool) -> None:
    """Sign a decision to cross the goal's current (non-ship) gate.

    Example: harness unpark fix-login-timeout --key ~/.ssh/id_ed25519 --extend-budget iterations=5
    """
    from harness.commands.decide import unpark as run_unpark

    emit(
        as_json,
        "unpark",
        goal_id,
        lambda o: run_unpark(_cwd(), goal_id, key, extend, _env(), o, push),
    )


@cli.command("rotate-owners")
@click.argument("goal_id")
@_OWNER_KEY
def rotate_owners(goal_id: str, key: Path) -> None:
    """Sign the change of .harness/owners for a started goal, with a key it started under.

    The new owners file is the checkout's; commit it with goals/<id>.approval.

    Example: harness rotate-owners fix-login-timeout --key ~/.ssh/old_owner_key
    """
    from harness.commands.rotate import rotate_owners as run_rotate

    _done(run_rotate(_cwd(), goal_id, key, _env(), sys.stdout))


@cli.command()
@click.argument("goal_ids", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON list.")
@click.option(
    "--check",
    "check_",
    is_flag=True,
    help="Exit 10 if a goal is parked at eyes, 11 if one needs attention, 12 if one is stale.",
)
def status(goal_ids: tuple[str, ...], as_json: bool, check_: bool) -> None:
    """One line per goal: status, step, iteration, failing test, budget, gate.

    Example: harness status --check || notify-owners
    """
    from harness.commands.status import status as run_status

    _done(run_status(_cwd(), list(goal_ids), as_json, check_, _env(), sys.stdout))


_FORMATS = ["text", "md", "json", "html"]  # replay's (commands/replay.py:FORMATS)
_OUT = _path_option("--out", "out_file", "Write to this file instead of stdout.")
_RUN_NUMBER = click.option(
    "--run", "run_number", type=int, help="Only this run of a recurring goal (default: every run)."
)


@cli.command()
@click.argument("goal_id")
@click.option("--format", "fmt", default="text", show_default=True, type=click.Choice(_FORMATS))
@_OUT
@_RUN_NUMBER
def replay(goal_id: str, fmt: str, out_file: Path | None, run_number: int | None) -> None:
    """Render a goal's record from its ledger alone.

    Example: harness replay fix-login-timeout --format md --out report.md
    """
    from harness.commands.replay import replay as run_replay

    _done(run_replay(_cwd(), goal_id, fmt, out_file, _env(), sys.stdout.buffer, run=run_number))


@cli.command()
@click.argument("goal_id")
@_OUT
@_RUN_NUMBER
def trace(goal_id: str, out_file: Path | None, run_number: int | None) -> None:
    """The record as OpenTelemetry spans (OTLP/JSON): a trace per run, a span per step.

    Example: harness trace fix-login-timeout --out trace.json
    """
    from harness.commands.trace import trace as run_trace

    _done(run_trace(_cwd(), goal_id, out_file, _env(), sys.stdout.buffer, run=run_number))


@cli.command()
@click.argument("goal_id")
@_path_option("--out", "out_file", "Write the bundle to this file instead of stdout.")
def attest(goal_id: str, out_file: Path | None) -> None:
    """A shipped goal's in-toto attestations: DSSE envelopes, one a line (JSON Lines).

    Example: harness attest fix-login-timeout --out fix-login-timeout.intoto.jsonl
    """
    from harness.commands.attest import attest as run_attest

    _done(run_attest(_cwd(), goal_id, out_file, _env(), sys.stdout.buffer))


@cli.command()
@click.argument("goal_id")
@click.option("--iteration", type=int, metavar="N", help="Only what build N changed.")
@click.option("--stat", is_flag=True, help="git's --stat: files and line counts.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document (files, patch).")
def diff(goal_id: str, iteration: int | None, stat: bool, as_json: bool) -> None:
    """The goal's code change without ledger/: base to gate commit, as git prints it.

    Example: harness diff fix-login-timeout --iteration 2
    """
    from harness.commands.diff import diff as run_diff

    _done(run_diff(_cwd(), goal_id, iteration, stat, as_json, _env(), sys.stdout.buffer))


@cli.command()
@click.argument("goal_ids", nargs=-1)
@click.option("--all", "every", is_flag=True, help="Every goal with a record, and an index.")
@_path_option("--out", "out_dir", "The folder to write index.html and <id>.html into.")
@_JSON
def report(goal_ids: tuple[str, ...], every: bool, out_dir: Path | None, as_json: bool) -> None:
    """Write a static, self-contained site: an index of the goals and each one's report.

    Example: harness report --all --out harness-report
    """
    from harness.commands.report import report as run_report

    ids = list(goal_ids)
    emit(as_json, "report", ids, lambda o: run_report(_cwd(), ids, every, out_dir, _env(), o))


@cli.command()
@click.argument("goal_ids", nargs=-1)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option(
    "--secrets",
    is_flag=True,
    help="Also look in every event for this runner's secret values and token shapes (exit 3).",
)
def verify(goal_ids: tuple[str, ...], as_json: bool, secrets: bool) -> None:
    """Check chain, MACs, cell binding and approvals; name the first bad event.

    With --secrets, a record holding a secret (a value of a variable whose name says
    secret, or of the config's redact_env, or a token of a known shape) fails, each named
    by its segment, line, event and receipt, never by its value.

    Example: harness verify --secrets fix-login-timeout
    """
    from harness.commands.verify import verify as run_verify

    _done(run_verify(_cwd(), list(goal_ids), _env(), sys.stdout, as_json, secrets=secrets))


@cli.command()
@click.argument("goal_id")
@_JSON
def cancel(goal_id: str, as_json: bool) -> None:
    """Record a cancellation; the goal stops at `cancelled`.

    Example: harness cancel fix-login-timeout
    """
    from harness.commands.cancel import cancel as run_cancel

    emit(as_json, "cancel", goal_id, lambda o: run_cancel(_cwd(), goal_id, _env(), o))


@cli.command()
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON list of {check, status, finding, fix}."
)
@click.option(
    "--notify-url", metavar="URL", help="POST a test notification to URL; say how it went."
)
def doctor(as_json: bool, notify_url: str | None) -> None:
    """Check this machine and repository: one line per check, a fix for each problem.

    Exits 0 when nothing failed, 3 when a failure is a trust problem (secret, records,
    approvals, a worktree on the wrong branch), else 2. Never prints the secret.

    Example: harness doctor --json
    """
    from harness.commands.doctor import doctor as run_doctor

    _done(run_doctor(_cwd(), _env(), sys.stdout, as_json, notify_url))


@cli.command()
@_path_option("--dir", "directory", "Build the demo here (default: a new temp folder).")
def demo(directory: Path | None) -> None:
    """Run the embedded demo: no network, no model.

    Example: harness demo --dir /tmp/harness-demo
    """
    from harness.commands.demo import demo as run_demo

    _done(run_demo(directory, sys.stdout))


cli.add_command(ci)


def main(argv: list[str] | None = None, held: Mapping[str, str] | None = None) -> None:
    """Run the CLI. `held`: what harness.__main__ took from the environment before importing
    this module; without it, the variables are taken here (a caller of harness.cli:main)."""
    if held is None:
        from harness.trust.secret import take_from_environment

        held = take_from_environment()
    _HELD.update(held)
    cli.main(args=argv, prog_name="harness")
