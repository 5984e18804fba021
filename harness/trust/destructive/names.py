"""Names, not values: whether a secret-looking assignment holds a real secret."""

from __future__ import annotations

import re

_PLACEHOLDER_WORDS = (
    "example", "changeme", "change_me", "your", "xxx", "dummy", "placeholder", "redacted",
    "fake", "sample", "test", "demo", "${", "{{", "%(", "<", "***", "://",
)  # fmt: skip
# Names, not values: an env var's name (HARNESS_SECRET_FILE), an identifier (privateKeyUsage).
_NAME_LIKE_RE = re.compile(r"[A-Z][A-Z0-9_]*|[A-Za-z]+")
_PATH_LIKE_RE = re.compile(r"[\w.-]*(?:/[\w.-]+)+/?")


def real_secret(match: re.Match[str]) -> bool:
    value = match["value"]
    placeholder = any(word in value.lower() for word in _PLACEHOLDER_WORDS)
    placeholder = placeholder or _NAME_LIKE_RE.fullmatch(value) is not None
    return (
        not placeholder
        and not value.startswith(("/", "./"))
        and not (_PATH_LIKE_RE.fullmatch(value))
    )
