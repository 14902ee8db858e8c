"""The ``--keyring`` / ``--keyring-filekey`` options, declared once for every command that reads
pages (inspect and its --map, pages, page, checksum, records, simulate, sdi, tui).

The decorated command receives ``keyring``: the :class:`~ibdtool.parsers.keyring.Keyring` read from
the file, or None. A key file that cannot be read is a one-line error (exit 2). The keyring
code is imported only when ``--keyring`` is given.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ibdtool.errors import InputError

if TYPE_CHECKING:
    from ibdtool.parsers.keyring import Keyring

F = TypeVar("F", bound=Callable[..., Any])
#: far more than any key file holds (MariaDB's lists a few keys, MySQL's keyring_file a few
#: dozen); what is read before a key file is refused
KEYRING_MAX_BYTES = 16 << 20
#: the key file's type, one for every command (click words each new Path type through
#: gettext: a lookup a command, ~25 µs each, at every start)
_KEY_FILE = click.Path(readable=False)


def load_keyring(path: str | None, filekey: str | None) -> Keyring | None:
    """The keys of ``path`` (None without one); :class:`InputError` if it cannot be read."""
    if path is None:
        if filekey is not None:
            raise InputError("--keyring-filekey needs --keyring")
        return None
    # imported only now: ibdtool.parsers.keyring loads construct and cryptography (start-up, issue
    # 14)
    from ibdtool.fs import read_capped
    from ibdtool.parsers.keyring import MAX_SECRET, KeyringError, parse_keyring

    data = read_capped(path, KEYRING_MAX_BYTES, "key file")
    secret: str | bytes | None = filekey
    if filekey is not None and filekey.startswith("FILE:"):
        raw = read_capped(filekey[5:], MAX_SECRET + 2, "filekey file").rstrip(b"\r\n")
        if not raw or len(raw) > MAX_SECRET:
            raise InputError(f"filekey {filekey[5:]}: the secret must be 1..{MAX_SECRET} bytes")
        secret = raw
    try:
        return parse_keyring(data, secret)
    except KeyringError as exc:
        raise InputError(f"{path}: {exc}") from None


def keyring_options(fn: F) -> F:
    """Add ``--keyring FILE`` and ``--keyring-filekey SECRET`` and pass ``keyring=``."""

    @click.option(
        "--keyring",
        "keyring_path",
        metavar="FILE",
        type=_KEY_FILE,
        help="Keys of an encrypted tablespace: a MariaDB file_key_management key file, a MySQL "
        "keyring_file, or the .cfp that FLUSH TABLES … FOR EXPORT wrote.",
    )
    @click.option(
        "--keyring-filekey",
        metavar="SECRET",
        help="The secret of an encrypted MariaDB key file (file_key_management_filekey; "
        "FILE:<path> reads it from a file).",
    )
    @functools.wraps(fn)
    def wrapper(
        *args: Any, keyring_path: str | None, keyring_filekey: str | None, **kw: Any
    ) -> Any:
        return fn(*args, keyring=load_keyring(keyring_path, keyring_filekey), **kw)

    return wrapper  # type: ignore[return-value]
