"""CRC-32C from the ``crc32c`` package's C extension, loaded without the package's ``__init__``.

The package's ``__init__`` imports ``importlib.metadata`` to set ``__version__``, which costs
~40 ms at every start-up; ``ibdtool checksum`` verifies a 1 GB file in about as long, so the
extension module is loaded directly. Falls back to the ordinary import if the layout differs.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
from collections.abc import Callable
from typing import Any


def _load() -> Callable[..., int]:
    try:
        spec = importlib.util.find_spec("crc32c")
        if spec is not None and spec.submodule_search_locations:
            folder = next(iter(spec.submodule_search_locations))
            for name in os.listdir(folder):
                if name.startswith("_crc32c.") and name.endswith(".so"):
                    path = os.path.join(folder, name)
                    loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", path)
                    ext_spec = importlib.util.spec_from_file_location(
                        "crc32c._crc32c", path, loader=loader
                    )
                    if ext_spec is None:
                        break
                    module: Any = importlib.util.module_from_spec(ext_spec)
                    loader.exec_module(module)
                    fn: Callable[..., int] = module.crc32c
                    return fn
    except (ImportError, OSError):
        pass
    from crc32c import crc32c as fallback

    return fallback


crc32c: Callable[..., int] = _load()
