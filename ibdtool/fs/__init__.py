"""Files and filesystems: opening what ibdtool reads, creating what it writes, and what the
filesystem really stores for a file.

- ``opening``: open an input file read-only, a regular file only, before reading a byte.
- ``creating``: create the files ibdtool writes (new files only, never through a link).
- ``allocation``: allocated bytes, holes and extents (st_blocks, SEEK_DATA/SEEK_HOLE, FIEMAP).

Uses nothing of ibdtool but :mod:`ibdtool.errors`. New here: extent and DROP cost, and
filesystem calibration.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ibdtool.fs.allocation import Allocation, read_allocation, scan_ranges
    from ibdtool.fs.creating import create_new
    from ibdtool.fs.opening import open_regular, read_capped
else:
    from ibdtool.exports import lazy

    __getattr__, __dir__ = lazy(
        __name__,
        {
            "allocation": "Allocation read_allocation scan_ranges",
            "creating": "create_new",
            "opening": "open_regular read_capped",
        },
    )
