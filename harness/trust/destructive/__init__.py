"""Destructive classes: which changes and commands a human must see before the loop goes on.

Owns parsing a staged `git diff` (`diff`), what a path says about a file (`paths`), the
built-in path, line, command, size and file rules (`path_rules`, `line_rule`, `statements`,
`names`, `commands`, `sizes`, `file_rule`, `gitattributes`, `manifests`, `lockfiles`, all
listed in `rules`), reading the few whole files those read (`contents`), the hits they
report (`hits`), classifying a diff or a command with them and with config rules
(`classify`), and the one-line summary for a gate (`summary`). May import:
`harness.errors`, `harness.store`, `harness.model`.
"""
