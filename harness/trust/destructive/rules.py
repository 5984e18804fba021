"""Every built-in rule in one place: the line rules in order, and each rule id's class."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from harness.trust.destructive.commands import COMMAND_RULES
from harness.trust.destructive.path_rules import PATH_RULES
from harness.trust.destructive.sizes import SIZE_RULES
from harness.trust.destructive.statements import STATEMENT_RULES

LINE_RULES = (*STATEMENT_RULES, *COMMAND_RULES)

RULE_CLASSES: Mapping[str, str] = MappingProxyType(
    {rule.id: rule.cls for rule in PATH_RULES}
    | {rule.id: rule.cls for rule in LINE_RULES}
    | SIZE_RULES
)
"""Every built-in rule id and the class it reports (documented in docs/specs/destructive.md)."""
