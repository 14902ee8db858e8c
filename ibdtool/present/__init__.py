"""Words and pictures for the front ends (the CLI and the TUI), without Rich or Textual.

- ``text``: numbers in words: sizes, counts, durations, intervals.
- ``describe``: inspect and simulate results in words.
- ``pagemap``: a page map as a static picture: categories, cells, legend, SVG.
- ``palette``: the colours pages are drawn in, the same in every picture.

Uses :mod:`ibdtool.tablespace` and :mod:`ibdtool.advise`, never :mod:`ibdtool.cli`.
"""
