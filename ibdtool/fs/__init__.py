"""Files and filesystems: opening what ibdtool reads, creating what it writes, and what the
filesystem really stores for a file.

- ``opening``: open an input file read-only, a regular file only, before reading a byte.
- ``creating``: create the files ibdtool writes (new files only, never through a link).
- ``allocation``: allocated bytes, holes and extents (st_blocks, SEEK_DATA/SEEK_HOLE, FIEMAP).

Uses nothing of ibdtool but :mod:`ibdtool.errors`. New here: extent and DROP cost, and
filesystem calibration.
"""
