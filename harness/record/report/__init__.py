"""The HTML report (`harness replay <id> --format html`): one self-contained page per goal.

Built in one pass over the verified records (`collect`) into a bounded page model (`model`),
then written section by section (`page` for the skeleton and `render_html`, `budget` and
its `charts`, `timeline`, `gates`), with hostile text escaped by `safe`, values formatted
by `fmt`, shared table cells in `cells` and the stylesheet in `style`. The page loads
nothing, runs nothing and holds no time but the events' own: the same ledger, the same bytes.

May import: `harness.errors`, `harness.store`, `harness.model`, the rest of `harness.record`.
"""
