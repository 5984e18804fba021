"""The summary: hits grouped by class in order, bounded, on one line."""

from __future__ import annotations

from harness.trust.destructive.classify import classify_changes
from harness.trust.destructive.hits import Hit
from harness.trust.destructive.summary import summarize
from tests.trust.destructive.probes import change


def test_summarize_groups_by_class_in_order_and_bounds_items() -> None:
    hits = classify_changes(
        [
            change("migrations/0002.sql", "A", added=["DROP TABLE users;"]),
            change("app/auth/views.py", "M", removed=["@login_required"]),
        ]
    )
    assert summarize(hits) == (
        "schema_change: migrations/0002.sql; migrations/0002.sql:1 DROP TABLE users; | "
        "data_deletion: migrations/0002.sql:1 DROP TABLE users; | "
        "auth: app/auth/views.py; app/auth/views.py:1 @login_required"
    )
    assert summarize(hits, limit=1) == (
        "schema_change: migrations/0002.sql | data_deletion: … | auth: … … (+4 more)"
    )
    assert summarize([]) == ""
    assert "\n" not in summarize([Hit("auth", "x", "a\nb", 1, "t")])
