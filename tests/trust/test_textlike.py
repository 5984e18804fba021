"""Which files git calls binary are read as text by the destructive classifier."""

from __future__ import annotations

import pytest

from harness.trust.destructive.textlike import looks_like_text

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4


@pytest.mark.parametrize(
    ("path", "head", "text"),
    [
        ("app/db.py", b"\x00binary to git", True),  # the name says source
        ("migrations/0002.SQL", b"", True),
        ("deploy", b"#!/bin/sh\n\x00\nrm -rf /srv\n", True),  # a shebang
        ("Makefile", b"\x00", True),
        ("notes", b"rm -rf /srv/data\n\x00\n" * 20, True),  # mostly printable
        ("logo.png", PNG, False),
        ("blob.bin", bytes(range(256)) * 8, False),
        ("empty.bin", b"", False),
    ],
)
def test_looks_like_text(path: str, head: bytes, text: bool) -> None:
    assert looks_like_text(path, head) is text
