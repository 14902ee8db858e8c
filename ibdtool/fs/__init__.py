"""Files and filesystems: opening what ibdtool reads, creating what it writes, and what the
filesystem really stores for a file.

- ``opening``: open an input file read-only, a regular file only, before reading a byte.
- ``creating``: create the files ibdtool writes (new files only, never through a link).
- ``allocation``: allocated bytes, holes and extents (st_blocks, SEEK_DATA/SEEK_HOLE, FIEMAP),
  of a whole file or of a window of it (a split scan's part reads its own; the totals joined).
- ``mounts``: the mount holding a file (``/proc/self/mountinfo``) and its device's discard.
- ``rates``: the cost of freeing extents measured on named filesystems (the built-in table).
- ``calibrate``: measure that cost on this filesystem, in place; the state file keeping it.
- ``statefile``: where that state file is (apart, so that a prediction can see there is none
  without loading ``calibrate``).
- ``extents``: what freeing a file's extents costs (DROP TABLE, unlink), predicted as a
  range with its basis; how contiguous a file is and what that costs a cold scan.
- ``users``: the processes holding a file open, or serving the directory it is in.
- ``unlink``: a DROP that does not stall: a hard link before it, paced steps after.
- ``ranges``: byte ranges kept packed (~2.5 bytes a range: a page-compressed file has one
  a page).

Uses nothing of ibdtool but :mod:`ibdtool.errors`.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ibdtool.fs.allocation import (
        FIEMAP_BIG_BATCH,
        Allocation,
        AllocationTotals,
        WindowCounts,
        allocation_stat,
        join_windows,
        read_allocation,
        read_window,
        scan_ranges,
    )
    from ibdtool.fs.calibrate import (
        Calibration,
        CalibrationRun,
        load_calibrations,
        measure_filesystem,
        save_calibration,
        state_path,
    )
    from ibdtool.fs.creating import create_new
    from ibdtool.fs.extents import (
        DropCost,
        Layout,
        dense_drop_cost,
        dense_extents,
        drop_cost,
        drop_total,
        filesystem_of,
        layout,
        predict_between,
        rate_for,
    )
    from ibdtool.fs.mounts import Mount, mount_of
    from ibdtool.fs.opening import open_regular, read_capped
    from ibdtool.fs.ranges import PackedRanges
    from ibdtool.fs.rates import RATES, Rate
    from ibdtool.fs.unlink import (
        DROP_SUFFIX,
        DropPrepared,
        FreeStep,
        drop_prepare,
        free_in_steps,
        idle_io,
    )
    from ibdtool.fs.users import SERVER_NAMES, User, lock_exclusive, users_of
else:
    from ibdtool.exports import lazy

    __getattr__, __dir__ = lazy(
        __name__,
        {
            "allocation": (
                "FIEMAP_BIG_BATCH Allocation AllocationTotals WindowCounts allocation_stat "
                "join_windows read_allocation read_window scan_ranges"
            ),
            "calibrate": (
                "Calibration CalibrationRun load_calibrations measure_filesystem "
                "save_calibration state_path"
            ),
            "creating": "create_new",
            "extents": (
                "DropCost Layout dense_drop_cost dense_extents drop_cost drop_total "
                "filesystem_of layout predict_between rate_for"
            ),
            "mounts": "Mount mount_of",
            "opening": "open_regular read_capped",
            "ranges": "PackedRanges",
            "rates": "RATES Rate",
            "unlink": "DROP_SUFFIX DropPrepared FreeStep drop_prepare free_in_steps idle_io",
            "users": "SERVER_NAMES User lock_exclusive users_of",
        },
    )
