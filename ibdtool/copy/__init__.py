"""Copying and re-punching: the engine of ``ibdtool copy``.

- ``local``: sparse copies and in-place re-punching on one host.
- ``readback``: the page check of a local copy, on the read-back of each window.
- ``agent``: the self-contained half (stdlib only): sparse file primitives and the stream
  protocol; sent as it is down ssh to the other host.
- ``remote``: copies across hosts over the system ssh.
- ``repunch``: which bytes of a tablespace are needless, and who holds the file.

Uses :mod:`ibdtool.fs` and :mod:`ibdtool.tablespace`.
"""
