"""Make the venv's editable install of this checkout a plain path entry (``scripts/setup.sh``).

    .venv/bin/python scripts/editable_path.py

``pip install -e .`` writes ``__editable__.ibdtool-*.pth``, a line that imports setuptools'
finder at every start of the venv's Python; the finder imports ``pathlib`` (with ``urllib``,
``ipaddress``, ``fnmatch``) and ``importlib.util`` before ibdtool runs, and stays in
``sys.meta_path`` (bench/RESULTS.md, "Start-up": ~1 ms of ``inspect --json``, which needs most of
those modules itself, ~4 ms of ``--help``, which does not). This rewrites that ``.pth`` as a
path line instead: ``<venv>/ibdtool-path``, a folder whose one entry is a link ``ibdtool`` to the
checkout's ``ibdtool/`` (where ``parsers`` and ``tui`` are links already: docs/layout.md). Python
reads a path line without importing anything; the install still exposes one name, ``ibdtool``
(a line with the checkout itself would put ``tests``, ``bench``, ``parsers``... on ``sys.path``
too); a module added to the checkout is found with no new install, as with the finder; and
``pip uninstall ibdtool`` still removes the ``.pth`` (pip's record of the install), which takes
the path entry away. Run it after each ``pip install -e .``, which writes the finder's line again.

Exit 2 with one line on stderr if the venv holds no editable install of ibdtool.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: the folder the path line names, in the venv: pip never writes there
FOLDER = "ibdtool-path"


def main() -> int:
    site = Path(sysconfig.get_paths()["purelib"])
    pths = sorted(site.glob("__editable__.ibdtool-*.pth"))
    if not pths:
        print(f"editable_path: no editable install of ibdtool in {site}", file=sys.stderr)
        return 2
    folder = Path(sys.prefix) / FOLDER
    folder.mkdir(exist_ok=True)
    link = folder / "ibdtool"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(REPO / "ibdtool", target_is_directory=True)
    for pth in pths:
        tmp = pth.with_name(pth.name + ".new")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as out:
            out.write(f"{folder}\n")
        os.replace(tmp, pth)
    return 0


if __name__ == "__main__":
    sys.exit(main())
