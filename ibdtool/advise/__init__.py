"""Simulation and advice: what compression would allocate, and what to choose.

- ``simulate``: predict what page compression (or ROW_FORMAT=COMPRESSED) would allocate.
- ``recommend``: per block size, the algorithm that saves most and the cheapest close to it.
- ``cpu_cost``: the CPU cost of codecs, measured so that two runs agree.

Uses :mod:`ibdtool.tablespace` and :mod:`ibdtool.fs`. New here: rebuild prediction and
other predictions.
"""
