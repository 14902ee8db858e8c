"""Copying and re-punching: the engine of ``ibdtool copy``.

- ``local``: sparse copies and in-place re-punching on one host.
- ``readback``: the page check of a local copy, on the read-back of each window.
- ``agent``: the self-contained half (stdlib only): sparse file primitives and the stream
  protocol; sent as it is down ssh to the other host.
- ``remote``: copies across hosts over the system ssh.
- ``replies``: the shape of every reply of a remote agent, declared once and checked.
- ``repunch``: which bytes of a tablespace are needless, and who holds the file.

Uses :mod:`ibdtool.fs` and :mod:`ibdtool.tablespace`.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ibdtool.copy.agent import (
        CODEC_IDS,
        DATA_HEAD,
        DATA_PIECE,
        FRAME,
        MAX_PIECES,
        PIECE,
        WALK_FRAME,
        ZSTD_FAST_LEVEL,
        AgentError,
        Codec,
        Interrupted,
        ProtocolError,
        available_codecs,
        batch_table,
        decode_batch,
        one_line,
        parse_json,
        read_json,
        resolve_destination,
        unpack_ranges,
    )
    from ibdtool.copy.local import (
        VERIFY_MODES,
        CopyFailed,
        CopyOptions,
        copy_local,
        repunch_in_place,
    )
    from ibdtool.copy.remote import (
        AgentSession,
        Sessions,
        SshConfig,
        parse_location,
        pull,
        push,
        relay,
    )
    from ibdtool.copy.replies import check_reply, reply_failure
else:
    from ibdtool.exports import lazy

    __getattr__, __dir__ = lazy(
        __name__,
        {
            "agent": (
                "AgentError CODEC_IDS Codec DATA_HEAD DATA_PIECE FRAME Interrupted MAX_PIECES "
                "PIECE ProtocolError WALK_FRAME ZSTD_FAST_LEVEL available_codecs batch_table "
                "decode_batch one_line parse_json read_json resolve_destination unpack_ranges"
            ),
            "local": "CopyFailed CopyOptions VERIFY_MODES copy_local repunch_in_place",
            "remote": "AgentSession Sessions SshConfig parse_location pull push relay",
            "replies": "check_reply reply_failure",
        },
    )
