"""`format: plain`: the output says nothing about spend; only the report file may."""

from __future__ import annotations

from harness.loop.agents.lines import Parser


class PlainParser(Parser):
    name = "plain"
