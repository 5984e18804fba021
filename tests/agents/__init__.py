"""The conformance suite: the real, pinned agent CLIs against the scripted model server."""

import pytest

# scenario.py holds shared assertions (the outage's): rewritten, their failures show values.
pytest.register_assert_rewrite("tests.agents.scenario")
