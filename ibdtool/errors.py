"""The error hierarchy and exit codes shared by every command.

Every failure a user can cause becomes an :class:`IbdtoolError` with a one-line message; the CLI
prints ``ibdtool: error: <message>`` on stderr and exits with its code. Nothing else should
reach the user as a traceback (``--traceback`` shows one for developers).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FOUND = 1  # a check found what it looks for (checksum failures, --fail-on conditions)
    BAD_INPUT = 2  # unreadable, missing, not a tablespace, bad arguments
    INTERRUPTED = 130


class IbdtoolError(Exception):
    """A failure with a one-line message meant for the user."""

    exit_code: ExitCode = ExitCode.BAD_INPUT

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InputError(IbdtoolError):
    """The input cannot be read as asked (missing, unreadable, not a tablespace, truncated).

    The parsers raise :class:`ibdtool.parsers.errors.ParseError` (a ``ValueError``) without knowing
    the file; the engine catches it where it reads one and raises this with the file name in front.
    """
