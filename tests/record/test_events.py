"""Every consumer table keyed by event type covers every type in `events.EVENT_TYPES`."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from harness.record.events import EVENT_TYPES, EventType
from harness.record.fold import FOLD
from harness.record.render import DESCRIBE


@pytest.mark.parametrize("table", [FOLD, DESCRIBE], ids=["fold", "describe"])
def test_table_covers_every_event_type(table: Mapping[EventType, object]) -> None:
    assert sorted(table) == sorted(EVENT_TYPES)
