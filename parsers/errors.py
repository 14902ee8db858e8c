"""The one base class of every error the parsers raise on bad input.

A parser that meets bytes it cannot read raises :class:`ParseError` (or a subclass: the codecs'
:class:`~ibdtool.parsers.codecs.CodecError`, the SDI reader's
:class:`~ibdtool.parsers.sdi.SdiError`) with a one-line reason. It derives from ``ValueError``, so
code that caught ``ValueError`` before keeps working. The parsers know nothing of the user: the
engine (:mod:`ibdtool.errors`) turns these into ``InputError`` where it reads a file, adding the
file name, and the CLI prints that one line.
"""

from __future__ import annotations


class ParseError(ValueError):
    """Bytes that cannot be decoded as the format says; the message is one line."""
