"""A stand-in for ``ssh`` that runs the real agent here and mutates its replies on the way out.

Used as the ssh command (``-e "python3 tests/fuzz/fake_ssh.py"`` or ``IBDTOOL_SSH``) by the
hostile-remote tests and the fuzz harness (:mod:`tests.fuzz.remote`). Called as ssh is,
``fake_ssh.py [-o OPTION]... -- HOST REMOTE_COMMAND``, it reads the agent's source from stdin
as the bootstrap in ``REMOTE_COMMAND`` would (its byte count is in the bootstrap), runs the
agent's ``main()`` in this process with stdin as given, and passes every frame the agent writes
through the rules of ``$IBDTOOL_FAKE_REMOTE`` (a JSON list; none: an honest remote). The agent's
code and its answers are the real ones; only what crosses the "wire" back is changed.

A rule: ``{"kind": "J", "nth": 2, "op": ..., ...}`` applies to the ``nth`` frame (1-based) of
that kind the agent writes (``"nth": 0``: every one). Operations:

* ``set``: ``path`` (keys and indices into the JSON message), ``value``: the value there;
  ``del``: remove ``path``.
* ``payload``: ``hex``, the frame's new payload; ``ranges``: ``[[start, end], ...]`` packed and
  compressed as a plan; ``comb``: a range of ``len`` bytes every ``step`` bytes up to
  ``upto`` (millions of them); ``bomb``: ``n`` zero bytes zlib-compressed as the payload;
  ``body_bomb``: the same after a ``D`` frame's head and piece table; ``cut``: the first
  ``at`` bytes only; ``deep``: JSON nested ``n`` deep (objects with ``obj``).
* ``pack``: ``at``, ``fmt`` (a struct format), ``value``: packed into the payload at ``at``
  (a piece's offset, a window's index, a batch's declared length).
* ``flip``: xor ``0xff`` into the byte at ``at`` (modulo the payload's length).
* ``spray``: ``frames`` ``D`` frames sent before this one, each of ``pieces`` one-byte raw
  pieces one after the other from byte ``first`` on (well-formed, 13 bytes a byte of the file).
* ``length``: the frame's header declares ``value`` bytes, whatever follows.
* ``drop``: the frame is not sent; ``end``: the stream stops after it (``before``: instead of
  it); ``insert``: a frame ``{"as": kind, "hex": payload}`` is sent before this one.

``$IBDTOOL_FAKE_CPU_LOG``: a file the agent's CPU seconds are appended to when it ends (a
benchmark's share of the remote host apart from ibdtool's).

Standard library only: it stands where the remote host would be.
"""

import contextlib
import json
import os
import re
import resource
import struct
import sys
import zlib

FRAME = struct.Struct(">cI")
MAGIC_LEN = len(b"IBDTOOL-AGENT 3\n")


def _walk(doc, path):
    for key in path[:-1]:
        doc = doc[key]
    return doc


class Mutating:
    """A binary stream in front of stdout that rewrites the agent's frames by the rules."""

    def __init__(self, out, rules):
        self.out = out
        self.rules = rules
        self.buf = b""
        self.magic = False
        self.seen = {}

    def write(self, data):
        self.buf += bytes(data)
        if not self.magic:
            if len(self.buf) < MAGIC_LEN:
                return len(data)
            self.out.write(self.buf[:MAGIC_LEN])
            self.buf = self.buf[MAGIC_LEN:]
            self.magic = True
        while len(self.buf) >= FRAME.size:
            kind, length = FRAME.unpack_from(self.buf)
            if len(self.buf) < FRAME.size + length:
                break
            payload = self.buf[FRAME.size : FRAME.size + length]
            self.buf = self.buf[FRAME.size + length :]
            self._frame(kind, payload)
        return len(data)

    def flush(self):
        self.out.flush()

    def _frame(self, kind, payload):
        name = kind.decode("latin-1")
        n = self.seen[name] = self.seen.get(name, 0) + 1
        declared = None
        stop = False
        for rule in self.rules:
            if rule.get("kind") != name or rule.get("nth", 0) not in (0, n):
                continue
            op = rule["op"]
            if op == "set" or op == "del":
                doc = json.loads(payload.decode())
                try:
                    where = _walk(doc, rule["path"])
                    if op == "set":
                        where[rule["path"][-1]] = rule["value"]
                    else:
                        del where[rule["path"][-1]]
                except (KeyError, IndexError, TypeError):
                    pass
                payload = json.dumps(doc).encode()
            elif op == "payload":
                payload = bytes.fromhex(rule["hex"])
            elif op == "ranges":
                packed = b"".join(struct.pack(">QQ", a, b) for a, b in rule["ranges"])
                payload = zlib.compress(packed, 1)
            elif op == "comb":  # a range of ``len`` bytes every ``step`` up to ``upto``
                step, n = rule["step"], rule["len"]
                packed = b"".join(
                    struct.pack(">QQ", a, a + n) for a in range(0, rule["upto"], step)
                )
                payload = zlib.compress(packed, 1)
            elif op == "bomb":
                payload = _bomb(rule["n"])
            elif op == "body_bomb":  # a D frame's own head and piece table, a bomb for bytes
                count = struct.unpack_from(">I", payload)[0] if len(payload) >= 4 else 0
                payload = payload[: 9 + 12 * count] + _bomb(rule["n"])
            elif op == "deep":  # JSON nested ``n`` deep: lists, or objects with ``obj``
                n = rule["n"]
                payload = (
                    (b'{"a":' * n + b"1" + b"}" * n) if rule.get("obj") else (b"[" * n + b"]" * n)
                )
            elif op == "cut":
                payload = payload[: rule["at"]]
            elif op == "pack":
                fmt, at = rule["fmt"], rule["at"]
                raw = bytearray(payload)
                need = at + struct.calcsize(fmt)
                if len(raw) < need:
                    raw += bytes(need - len(raw))
                struct.pack_into(fmt, raw, at, rule["value"])
                payload = bytes(raw)
            elif op == "flip":
                if payload:
                    raw = bytearray(payload)
                    raw[rule["at"] % len(raw)] ^= 0xFF
                    payload = bytes(raw)
            elif op == "length":
                declared = rule["value"]
            elif op == "drop":
                return
            elif op == "insert":
                extra = bytes.fromhex(rule["hex"])
                self.out.write(FRAME.pack(rule["as"].encode(), len(extra)) + extra)
            elif op == "spray":
                for extra in _spray(rule["first"], rule["frames"], rule["pieces"]):
                    self.out.write(FRAME.pack(b"D", len(extra)) + extra)
            elif op == "end":
                if rule.get("before"):
                    self._stop()
                stop = True
        self.out.write(FRAME.pack(kind, len(payload) if declared is None else declared))
        self.out.write(payload)
        if stop:
            self._stop()

    def _stop(self):
        self.out.flush()
        os._exit(0)


def _spray(first, frames, pieces):
    """``frames`` well-formed raw ``D`` payloads of ``pieces`` one-byte pieces each, one after
    the other from byte ``first`` on: 13 bytes on the wire for each byte of the file."""
    at = first
    for _ in range(frames):
        table = b"".join(struct.pack(">QI", at + i, 1) for i in range(pieces))
        yield struct.pack(">IBI", pieces, 0, pieces) + table + b"x" * pieces
        at += pieces


def _bomb(n):
    """zlib of ``n`` zero bytes (whole MiBs), made without compressing them: after a full
    flush every MiB of zeros compresses to the same bytes, so the stream is the first MiB's,
    the next one's repeated, an empty final block and the Adler-32 of all of it."""
    mib = bytes(1 << 20)
    count = max(1, n >> 20)
    c = zlib.compressobj(9)
    first = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(mib) + c.flush(zlib.Z_FULL_FLUSH)
    adler = ((count << 20) % 65521) << 16 | 1  # zeros: A stays 1, B gains 1 a byte
    return first + again * (count - 1) + b"\x03\x00" + struct.pack(">I", adler)


class _Stdout:
    def __init__(self, buffer):
        self.buffer = buffer

    def write(self, text):
        return self.buffer.write(text.encode())

    def flush(self):
        self.buffer.flush()


def main(argv):
    i = argv.index("--")
    command = argv[i + 2]
    size = int(re.search(r"read\((\d+)\)", command).group(1))
    code = sys.stdin.buffer.read(size)
    rules = json.loads(os.environ.get("IBDTOOL_FAKE_REMOTE") or "[]")
    # an honest remote: the agent's frames go out as written, as through a real ssh
    out = Mutating(sys.stdout.buffer, rules) if rules else sys.stdout.buffer
    sys.stdout = _Stdout(out)
    namespace = {"__name__": "ibdtool_agent"}
    exec(compile(code, "ibdtool-agent", "exec"), namespace)
    try:
        status = namespace["main"]()
    except BrokenPipeError:
        status = 3
    with contextlib.suppress(OSError):
        out.flush()
    log = os.environ.get("IBDTOOL_FAKE_CPU_LOG")
    if log:  # the agent's CPU seconds (the remote host's share), for a benchmark to tell apart
        usage = resource.getrusage(resource.RUSAGE_SELF)
        with open(log, "a") as f:
            f.write(f"{usage.ru_utime + usage.ru_stime}\n")
    os._exit(status or 0)


if __name__ == "__main__":
    main(sys.argv[1:])
