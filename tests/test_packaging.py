"""The sdist as it would be published: docs/ inside, license and classifiers declared."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_sdist_carries_docs_and_metadata(tmp_path: Path) -> None:
    # A copy of the tracked files, so the build writes nothing into the checkout.
    source = tmp_path / "source"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, (t.decode() for t in tracked)):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path / "dist"
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out)],
        cwd=source,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (sdist,) = out.glob("goal_harness-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {Path(*Path(n).parts[1:]).as_posix() for n in tar.getnames()}
        top = tar.getnames()[0].split("/")[0]
        pkg_info = tar.extractfile(f"{top}/PKG-INFO")
        assert pkg_info is not None
        meta = email.message_from_bytes(pkg_info.read())
    for doc in (ROOT / "docs").rglob("*.md"):
        assert doc.relative_to(ROOT).as_posix() in names
    assert {"LICENSE", "README.md", "docs/guide/README.md", "docs/specs/cli.md"} <= names
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    classifiers = meta.get_all("Classifier") or []
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert "Typing :: Typed" in classifiers
    assert meta["Requires-Python"] == ">=3.11"
