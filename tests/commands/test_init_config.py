"""The config `harness init` writes names every key the schema knows, points at a document
that exists, and each commented example is a value the harness accepts (issue 30, item 13)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from harness.commands.init import CONFIG_TEMPLATE
from harness.model.config import parse_config

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "harness" / "model" / "schema" / "config.schema.json"


def test_the_template_names_every_key_of_the_schema() -> None:
    keys = set(json.loads(SCHEMA.read_text())["properties"])
    named = set(re.findall(r"^(?:# )?([a-z_]+):", CONFIG_TEMPLATE, re.M))
    assert keys - named == set()


def test_the_document_it_names_exists_and_has_the_section() -> None:
    [(doc, section)] = re.findall(r"described in (docs/\S+) \(\"([^\"]+)\"\)", CONFIG_TEMPLATE)
    assert f"## {section}:" in (ROOT / doc).read_text()


def test_every_example_uncommented_is_a_valid_config() -> None:
    lines = CONFIG_TEMPLATE.splitlines()
    uncommented = [line[2:] if line.startswith("# ") and ":" in line else line for line in lines]
    text = "\n".join(line for line in uncommented if not line.startswith("#")) + "\n"
    config = parse_config(text.encode(), ".harness/config.yaml")
    assert config.sandbox == "auto" and config.notify is not None
