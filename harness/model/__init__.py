"""The model of the human-owned files: goal files, the config, and how YAML is read.

Owns the edge where human-written YAML becomes frozen dataclasses (`goal`, `config`,
`limits` for budgets, halting rules and durations), the strict loader (`yamlload`, the
only importer of PyYAML), schema checks (`yamlutil`, `schema/*.json`) and the wording of
every message about a file's values (`wording`). Nothing deeper indexes a raw mapping.

May import: `harness.errors`, `harness.store`.
"""
