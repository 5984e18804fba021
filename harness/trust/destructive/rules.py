"""Every built-in rule in one place: the line and file rules in order, and each rule id's
class."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from harness.trust.destructive.commands import COMMAND_RULES
from harness.trust.destructive.gitattributes import GIT_BEHAVIOUR_FILE_RULES
from harness.trust.destructive.lockfiles import LOCKFILE_RULES
from harness.trust.destructive.manifests import MANIFEST_FILE_RULES
from harness.trust.destructive.path_rules import PATH_RULES
from harness.trust.destructive.sizes import SIZE_RULES
from harness.trust.destructive.statements import STATEMENT_RULES

LINE_RULES = (*STATEMENT_RULES, *COMMAND_RULES)
FILE_RULES = (*GIT_BEHAVIOUR_FILE_RULES, *MANIFEST_FILE_RULES, *LOCKFILE_RULES)

RULE_CLASSES: Mapping[str, str] = MappingProxyType(
    {rule.id: rule.cls for rule in PATH_RULES}
    | {rule.id: rule.cls for rule in LINE_RULES}
    | {rule.id: rule.cls for rule in FILE_RULES}
    | SIZE_RULES
)
"""Every built-in rule id and the class it reports (documented in docs/specs/destructive.md)."""
