"""The record: the hash-chained ledger, the attested state cell, and what is rendered from them.

Owns the event types and their data (`events`), segments, lines, chain and MACs
(`ledger`), the format version every reader checks first (`formats`), the cell and its attested file (`cell`), the fold of events into the cell
(`fold`), loading a goal's record with every check (`hydrate`), finding where a record lives
(`locate`), and every rendering of it (`render` for text, markdown and JSON; the `report`
package for the HTML page). The record describes what happened; it never decides what
happens next.

May import: `harness.errors`, `harness.store`, `harness.model`. Never the loop.
"""
