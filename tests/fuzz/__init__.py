"""The fuzz harness: real tablespaces damaged on purpose, and every reader run on them.

:mod:`.originals` loads the real files (corpus and samples) with the geometry mutators need;
:mod:`.mutators` damages them (bit flips, truncations, header fields at their extremes, pointer
loops, compression bombs), drawing every choice from a :class:`~.mutators.Chooser` so that the
same mutators serve a seeded ``random.Random`` and hypothesis (which shrinks a failure to the
fewest, smallest mutations); :mod:`.crafts` makes the small hostile files of the regression
tests, one per class of bug fixed; :mod:`.runner` runs an entry point on a file, in-process or
as ``python -m ibdtool.cli`` under a time and address-space limit, and classifies the outcome.
``bench/fuzz_long.py`` is the long run.
"""
