"""`python -m harness` and the `harness` command.

The secret's variables leave this process's environment before anything else is imported
(click and the commands take most of the start-up time): harness.trust.secret's
take_from_environment, held in memory by harness.cli.
"""

from __future__ import annotations

from harness.trust.secret import take_from_environment


def main() -> None:
    held = take_from_environment()
    from harness.cli import main as cli_main

    cli_main(held=held)


if __name__ == "__main__":
    main()
