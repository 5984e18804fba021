"""The commands: one function per CLI command, taking typed arguments, returning an exit code.

`harness/cli.py` parses with click and calls `commands/<name>.py:<name>(...)`; no command
reads a YAML file or a ledger line itself, it asks the parts below.

May import: every other part. Only this part and `harness.cli` may import click.
"""
