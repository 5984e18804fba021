"""`python -m harness` and the `harness` command.

The secret's variables leave this process's environment before anything else is imported
(click and the commands take most of the start-up time): harness.trust.secret's
take_from_environment, held in memory by harness.cli. `harness run` in a plain form (the
one cron and CI call) skips click (harness.entry.plain_run); everything else goes to it.
"""

from __future__ import annotations

import sys

from harness.trust.secret import take_from_environment


def main() -> None:
    held = take_from_environment()
    from harness.entry import plain_run, run_plain

    plain = plain_run(sys.argv[1:])
    if plain is not None:
        sys.exit(run_plain(plain, held))
    from harness.cli import main as cli_main

    cli_main(held=held)


if __name__ == "__main__":
    main()
