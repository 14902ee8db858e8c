"""A bounded, read-only workload probe of one table: what its reads cost now.

``ibdtool server probe DB.TABLE`` and ``migrate --probe`` (before and after the rebuild) run on
the table itself, on a session of their own:

* **point reads** by primary key: a key value drawn at random between the first key column's
  MIN and MAX (two B-tree descents, no scan, no lock), read as "the first row at or after it"
  (one descent of the clustered index, one row: the *first read* of that key), then the same
  row again by its whole primary key (the *repeat*: its pages are in the buffer pool now);
* **short range reads**: ``RANGE_ROWS`` rows from a random key on;
* a fixed small number of them (``points``, ``ranges``), at most ``rate`` statements a second,
  and busy at most ``share`` of the wall time: after a statement that took *d* seconds (the
  probe's own clock, round trip included) it waits at least *d*·(1−share)/share. One
  connection, one statement at a time: never more than one server thread.

Before each statement it reads ``SHOW GLOBAL STATUS`` on a second session, and stops (it never
waits) when a ``--max-load`` figure is at or above its threshold: by default
``Threads_running`` as the server counts it, the probe's own status read included (so 1 when
the server is otherwise idle). The same read, after the statement, gives
``Innodb_buffer_pool_reads``: a statement during which it rose is counted *cold* (its pages, or
some, came from disk), else *warm*. The counter is global: on a busy server another session's
reads make a warm read look cold, never the reverse.

Over the probe's window it reads from performance_schema, where the server has it on: the
probe session's own statements (``events_statements_history``: the server's timing of each,
beside the client's), the table's I/O waits (``table_io_waits_summary_by_table``), its files'
reads (``file_summary_by_instance``), and the statement digests naming the table (the
workload's own statements on it during the window, the probe's taken out); and from
``SHOW GLOBAL STATUS`` the buffer pool's read requests and disk reads and MariaDB's page
compression counters, from ``information_schema.INNODB_CMP`` the ROW_FORMAT=COMPRESSED ones.

Nothing it runs writes: its session is ``SET SESSION TRANSACTION READ ONLY`` and every
statement is a ``SELECT`` or ``SHOW`` (:func:`~ibdtool.server.locks.probe_locks` names what
they lock: a shared metadata lock for each read of the table, no row lock). A probe is not
the workload: it says what a key lookup and a short scan cost on this table now, cold and
warm, not what the application's mix, concurrency and working set will feel (docs/cost.md).
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from ibdtool.errors import InputError
from ibdtool.server import sql
from ibdtool.server.context import Server
from ibdtool.server.errors import ServerError
from ibdtool.server.locks import probe_locks

#: first key column types a random key can be drawn for (between MIN and MAX)
NUMERIC_TYPES = frozenset(
    {"tinyint", "smallint", "mediumint", "int", "integer", "bigint"}
    | {"decimal", "numeric", "float", "double"}
)
#: the buffer pool's and the compression's global counters read around the probe
POOL_STATUS = ("Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads")
COMPRESSION_STATUS = (
    "Innodb_num_pages_page_compressed",
    "Innodb_num_pages_page_decompressed",
    "Innodb_num_pages_page_compression_error",
    "Innodb_page_compression_saved",
)
DEFAULT_MAX_LOAD = {"Threads_running": 8}
#: information_schema.INNODB_BUFFER_PAGE walks the whole pool (the manuals warn against it on
#: a busy server): the table's pages in the pool are counted only below this pool size
POOL_WALK_MAX = 512 * 2**20
STATEMENT_SECONDS = 2  # the server stops a probe statement that runs longer
LOCK_WAIT_SECONDS = 2  # a probe read waits no longer than this for the table's metadata lock


#: pauses before asking performance_schema again for a statement it has not recorded yet
#: (then none: a statement still missing keeps its client-side time only)
HISTORY_WAITS: tuple[float | None, ...] = (0.001, 0.005, 0.02, None)


@dataclass(frozen=True)
class ProbeSettings:
    """How much the probe reads, and how gently."""

    points: int = 100  # keys read (each twice: first read, repeat)
    ranges: int = 20  # short range reads
    range_rows: int = 20  # rows each range read returns (at most)
    rate: float = 20.0  # statements a second, at most
    share: float = 0.05  # of the wall time the probe's statements may take, at most
    max_load: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_MAX_LOAD))
    seed: int | None = None

    def __post_init__(self) -> None:
        if not 0 < self.share <= 1:
            raise InputError(f"--share {self.share}: expected a fraction in (0, 1]")
        if self.rate <= 0:
            raise InputError(f"--rate {self.rate}: expected statements a second above 0")

    def to_json(self) -> dict[str, Any]:
        return {
            "points": self.points,
            "ranges": self.ranges,
            "range_rows": self.range_rows,
            "rate": self.rate,
            "share": self.share,
            "max_load": self.max_load,
            "seed": self.seed,
        }


@dataclass(frozen=True)
class Read:
    """One probe statement: its kind, the client's seconds, rows, and what the server said."""

    kind: str  # "first", "repeat", "range"
    seconds: float
    rows: int
    pool_reads: int | None  # Innodb_buffer_pool_reads rose by this during it (global)
    server_seconds: float | None = None  # performance_schema's TIMER_WAIT, when it has it

    @property
    def cold(self) -> bool | None:
        return None if self.pool_reads is None else self.pool_reads > 0


def percentile(values: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q``-th percentile (0 < q ≤ 100): a value that was measured."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n·q/100)
    return ordered[int(rank) - 1]


@dataclass(frozen=True)
class Latency:
    """p50/p95/p99 and rows a second of a group of reads (the client's clock, and the
    server's own timing of the same statements when performance_schema gave it)."""

    n: int
    p50: float | None
    p95: float | None
    p99: float | None
    rows: int
    rows_per_s: float | None
    server_p50: float | None = None
    server_p95: float | None = None
    server_n: int = 0

    @classmethod
    def of(cls, reads: Sequence[Read]) -> Latency:
        secs = [r.seconds for r in reads]
        srv = [r.server_seconds for r in reads if r.server_seconds is not None]
        rows = sum(r.rows for r in reads)
        busy = sum(secs)
        return cls(
            len(reads),
            percentile(secs, 50),
            percentile(secs, 95),
            percentile(secs, 99),
            rows,
            rows / busy if busy > 0 else None,
            percentile(srv, 50),
            percentile(srv, 95),
            len(srv),
        )

    def to_json(self) -> dict[str, Any]:
        def ms(x: float | None) -> float | None:
            return None if x is None else round(1000 * x, 4)

        return {
            "n": self.n,
            "p50_ms": ms(self.p50),
            "p95_ms": ms(self.p95),
            "p99_ms": ms(self.p99),
            "rows": self.rows,
            "rows_per_s": None if self.rows_per_s is None else round(self.rows_per_s, 1),
            "server_n": self.server_n,
            "server_p50_ms": ms(self.server_p50),
            "server_p95_ms": ms(self.server_p95),
        }


@dataclass
class ProbeResult:
    """What a probe measured on one table, and over which window."""

    table: str
    when: str  # "now", "before", "after"
    settings: ProbeSettings
    reads: list[Read] = field(default_factory=list)
    stopped: str | None = None  # why it stopped early (--max-load, an error), or None
    seconds: float = 0.0  # wall time of the window
    busy_seconds: float = 0.0  # the probe's statements, the client's clock
    allocated_size: int | None = None  # the table's files, as the server said when it began
    file_size: int | None = None
    format: str | None = None
    space_ids: list[int] = field(default_factory=list)
    pages: int | None = None  # the table's pages (its files' size / page size)
    #: deltas over the window: {"pool": {...}, "compression": {...}, "table_io": {...},
    #: "file_io": {...}, "digests": {...}}; a part is None when the server would not say
    window: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def group(self, kind: str | None = None, cold: bool | None = None) -> Latency:
        reads = [r for r in self.reads if kind is None or r.kind == kind]
        if cold is not None:
            reads = [r for r in reads if r.cold is cold]
        return Latency.of(reads)

    @property
    def share_used(self) -> float | None:
        return self.busy_seconds / self.seconds if self.seconds > 0 else None

    def latencies(self) -> dict[str, Latency]:
        """The groups a report shows: every point read (first reads and repeats), first reads,
        repeats, cold and warm point reads (by the buffer pool's disk reads), range reads."""
        points = [r for r in self.reads if r.kind in ("first", "repeat")]
        return {
            "point": Latency.of(points),
            "first": self.group("first"),
            "repeat": self.group("repeat"),
            "cold": Latency.of([r for r in points if r.cold is True]),
            "warm": Latency.of([r for r in points if r.cold is False]),
            "range": self.group("range"),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "when": self.when,
            "settings": self.settings.to_json(),
            "statements": len(self.reads),
            "stopped": self.stopped,
            "seconds": round(self.seconds, 3),
            "busy_seconds": round(self.busy_seconds, 4),
            "share_used": None if self.share_used is None else round(self.share_used, 4),
            "file_size": self.file_size,
            "allocated_size": self.allocated_size,
            "format": self.format,
            "latency": {k: v.to_json() for k, v in self.latencies().items()},
            "window": self.window,
            "locks": [lk.to_json() for lk in probe_locks(LOCK_WAIT_SECONDS)],
            "notes": self.notes,
        }


@dataclass(frozen=True)
class _Key:
    columns: tuple[str, ...]
    lo: Any
    hi: Any


def probe_table(
    server: Server,
    schema: str,
    table: str,
    settings: ProbeSettings | None = None,
    *,
    when: str = "now",
    sleep: Callable[[float], bool] | None = None,
    on_read: Callable[[Read], None] | None = None,
) -> ProbeResult:
    """Probe ``schema.table`` (see module doc). ``sleep(seconds)`` waits and returns True to
    stop early (a cancel); ``on_read`` sees each statement as it ends. Raises InputError for a
    table the probe cannot read by key, ServerError when the server goes away."""
    st = settings or ProbeSettings()
    wait = sleep or _sleep
    result = ProbeResult(f"{schema}.{table}", when, st)
    _table_sizes(server, schema, table, result)
    key = _key(server, schema, table)
    rng = random.Random(st.seed)
    with (
        server.new_session("probe", read_timeout=STATEMENT_SECONDS + 30) as probe,
        server.new_session("probe-watch", read_timeout=30) as watch,
    ):
        _prepare(server, probe)
        names = sorted({*st.max_load, *POOL_STATUS, "Threads_running"})
        status_sql = sql.show_global_status(names)
        window = _Window(server, watch, schema, table, probe.thread_id, result.space_ids)
        window.open()
        start = time.monotonic()

        def step(kind: str, arg: Any) -> list[dict[str, Any]] | None:
            """One statement, between two status reads; None: stop."""
            before = _status(watch, status_sql, names)
            busy = _busy(before, st.max_load)
            if busy:
                result.stopped = busy
                return None
            t0 = time.monotonic()
            rows = _run(probe, schema, table, key, kind, arg, st)
            took = time.monotonic() - t0
            after = _status(watch, status_sql, names)
            read = Read(kind, took, len(rows), _delta(before, after, "Innodb_buffer_pool_reads"))
            read = window.with_server_time(read, result.reads)
            result.reads.append(read)
            result.busy_seconds += took
            if on_read is not None:
                on_read(read)
            if wait(max(1.0 / st.rate - took, took * (1 - st.share) / st.share)):
                result.stopped = "cancelled"
                return None
            return rows

        try:
            for kind, arg in _plan(st, lambda: _draw(key, rng)):
                rows = step(kind, arg)
                if rows is None:
                    break
                # a key read first: the same row again, by its whole primary key (its pages
                # are in the pool now)
                again = tuple(rows[0][c] for c in key.columns) if kind == "first" and rows else None
                if again is not None and step("repeat", again) is None:
                    break
        except ServerError as exc:
            result.stopped = f"server error: {exc.message}"
        finally:
            result.seconds = time.monotonic() - start
            window.close(result)
    if not result.reads and result.stopped is None:
        result.stopped = "the table is empty"
    return result


def _plan(st: ProbeSettings, draw: Callable[[], Any]) -> Iterator[tuple[str, Any]]:
    """The reads in order: first reads of keys, a range read every so often among them."""
    every = max(1, st.points // st.ranges) if st.ranges else 0
    ranges_left = st.ranges
    for i in range(st.points):
        yield "first", draw()
        if every and ranges_left and (i + 1) % every == 0:
            ranges_left -= 1
            yield "range", draw()
    for _ in range(ranges_left):
        yield "range", draw()


def _draw(key: _Key, rng: random.Random) -> Any:
    lo, hi = key.lo, key.hi
    if isinstance(lo, int) and isinstance(hi, int):
        return rng.randint(lo, hi)
    if isinstance(lo, Decimal) or isinstance(hi, Decimal):
        return Decimal(str(float(lo) + rng.random() * (float(hi) - float(lo))))
    return float(lo) + rng.random() * (float(hi) - float(lo))


def _run(
    probe: Any, schema: str, table: str, key: _Key, kind: str, arg: Any, st: ProbeSettings
) -> list[dict[str, Any]]:
    if kind == "repeat":
        return list(probe.query(sql.probe_point(schema, table, key.columns), arg))
    limit = 1 if kind == "first" else st.range_rows
    return list(probe.query(sql.probe_seek(schema, table, key.columns), (arg, limit)))


def _sleep(seconds: float) -> bool:
    time.sleep(max(0.0, seconds))
    return False


def _prepare(server: Server, probe: Any) -> None:
    """The probe session: read-only, short metadata lock waits, statements the server stops."""
    probe.execute(sql.PROBE_READ_ONLY)
    probe.execute(sql.SET_LOCK_WAIT_TIMEOUT, (LOCK_WAIT_SECONDS,))
    # an old server without the variable: the read timeout still bounds a statement
    with contextlib.suppress(ServerError):
        probe.execute(*server.flavor.statement_time_limit(STATEMENT_SECONDS))


def _key(server: Server, schema: str, table: str) -> _Key:
    cols = server.session.query(sql.PRIMARY_KEY_COLUMNS, (schema, table))
    if not cols:
        raise InputError(
            f"{schema}.{table}: no PRIMARY KEY (or no such table): the probe reads rows by key"
        )
    first_type = str(cols[0]["type"]).lower()
    if first_type not in NUMERIC_TYPES:
        raise InputError(
            f"{schema}.{table}: the primary key's first column is {first_type}: the probe draws "
            "keys between a numeric column's MIN and MAX"
        )
    names = tuple(str(c["name"]) for c in cols)
    row = server.session.query_one(sql.probe_key_bounds(schema, table, names[0])) or {}
    if row.get("lo") is None:
        raise InputError(f"{schema}.{table}: the table is empty: nothing to probe")
    return _Key(names, row["lo"], row["hi"])


def _table_sizes(server: Server, schema: str, table: str, result: ProbeResult) -> None:
    from ibdtool.server.tables import list_tables

    found, _ = list_tables(server, tables=[(schema, table)], with_pages=False)
    if not found:
        raise InputError(f"no such table: {schema}.{table}")
    t = found[0]
    if not t.innodb:
        raise InputError(f"{schema}.{table}: not an InnoDB table ({t.engine})")
    result.file_size = t.file_size
    result.allocated_size = t.allocated_size
    result.space_ids = [sp.space for sp in t.spaces]
    result.pages = t.file_size // server.page_size if t.file_size else None
    result.format = t.current_format(server.flavor.name)


def _status(watch: Any, statement: str, names: Sequence[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in watch.query(statement, tuple(names)):
        try:
            out[str(r["Variable_name"])] = int(r["Value"])
        except (TypeError, ValueError):
            continue
    return out


def _busy(status: dict[str, int], limits: dict[str, int]) -> str | None:
    for name, limit in limits.items():
        value = status.get(name)
        if value is not None and value >= limit:
            return f"--max-load: {name}={value} >= {limit}"
    return None


def _delta(a: dict[str, Any], b: dict[str, Any], name: str) -> int | None:
    x, y = a.get(name), b.get(name)
    if x is None or y is None:
        return None
    return int(y) - int(x)


class _Window:
    """performance_schema and the global counters, read as the probe begins and ends."""

    def __init__(
        self,
        server: Server,
        watch: Any,
        schema: str,
        table: str,
        probe_id: int,
        spaces: list[int],
    ) -> None:
        self.server = server
        self.spaces = spaces
        pool = _int_or_none(
            server.read_variables(["innodb_buffer_pool_size"]).get("innodb_buffer_pool_size")
        )
        self.walk_pool = bool(spaces) and pool is not None and pool <= POOL_WALK_MAX
        self.watch = watch
        self.schema = schema
        self.table = table
        self.probe_id = probe_id
        self.pfs = server.performance_schema
        self.thread_id: int | None = None
        self.history = False
        self.last_event = 0
        self.records = 0  # the probe's statements seen in the history since open()
        self.start: dict[str, Any] = {}

    def _try(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except ServerError:
            return None

    def _snapshot(self) -> dict[str, Any]:
        w = self.watch
        from ibdtool.parsers.filename import encode

        names = [*POOL_STATUS, *COMPRESSION_STATUS]
        snap: dict[str, Any] = {
            "status": self._try(lambda: _status(w, sql.show_global_status(names), names)),
            "cmp": self._try(lambda: w.query_one(sql.INNODB_CMP)),
        }
        if self.walk_pool:
            row = self._try(
                lambda: w.query_one(sql.pool_pages_of_spaces(len(self.spaces)), tuple(self.spaces))
            )
            snap["pool_pages"] = None if not row else int(row["pages"] or 0)
        if self.pfs:
            like = f"%/{_like(encode(self.schema))}/{_like(encode(self.table))}"
            snap["table_io"] = self._try(
                lambda: w.query_one(sql.PFS_TABLE_IO, (self.schema, self.table))
            )
            snap["file_io"] = self._try(lambda: w.query_one(sql.PFS_FILE_IO, (like + ".ibd",)))
            snap["file_io_parts"] = self._try(
                lambda: w.query_one(sql.PFS_FILE_IO, (like + "#P#%.ibd",))
            )
            pattern = f"%`{_like(self.schema)}` . `{_like(self.table)}`%"
            bare = f"%FROM `{_like(self.table)}`%"
            snap["digests"] = self._try(lambda: w.query(sql.PFS_DIGESTS, (pattern, bare)))
            if self.thread_id is not None:
                snap["own"] = self._try(
                    lambda: w.query_one(sql.PFS_THREAD_SELECTS, (self.thread_id,))
                )
        return snap

    def open(self) -> None:
        if self.pfs:
            row = self._try(lambda: self.watch.query_one(sql.PFS_THREAD_ID, (self.probe_id,)))
            self.thread_id = int(row["thread_id"]) if row and row.get("thread_id") else None
            consumers = self._try(lambda: self.watch.query(sql.PFS_STATEMENT_CONSUMERS)) or []
            on = {str(r["name"]) for r in consumers if str(r["enabled"]).upper() == "YES"}
            # the history is filled from the current events: both consumers must be on
            wanted = {"events_statements_current", "events_statements_history"}
            self.history = self.thread_id is not None and wanted <= on
            if self.history:
                rows = self._history()
                self.last_event = max((int(r["event_id"]) for r in rows), default=0)
        self.start = self._snapshot()

    def _history(self) -> list[dict[str, Any]]:
        return list(
            self.watch.query(sql.PFS_THREAD_STATEMENTS, (self.thread_id, self.last_event)) or []
        )

    def with_server_time(self, read: Read, earlier: list[Read]) -> Read:
        """The server's own timing of the statement just run (its history holds the last few
        statements of each thread: read after each). ``earlier`` are the reads before it, in
        order: a record of one of them that comes only now is given to it, in place.

        The probe's statements are paired with their records by order: the n-th statement of
        the probe's session since :meth:`open` carrying the tag is the n-th read (one session,
        one statement a read, and the server records a statement's end before it takes the
        next one). The server sends a statement's result before it records its end, so a read
        that asks first finds nothing yet and asks again, briefly; a record later than that
        (its server thread waiting for a core) shows up at the next read and goes to its own.
        Matched to the read being asked for, as it was, a late record left its own read
        untimed and gave the next one a wrong time or, beside that one's own, none (under
        load: 118 of 120 statements timed)."""
        if not self.history:
            return read
        reads = [*earlier, read]
        self._pair(reads)
        earlier[:] = reads[:-1]
        return reads[-1]

    def _pair(self, reads: list[Read]) -> None:
        """Give ``reads`` (every read so far, in order) the records the history has now for
        those without one, asking again briefly until the last read's has come."""
        for wait in HISTORY_WAITS:
            rows = self._try(self._history) or []
            if rows:
                self.last_event = max(int(r["event_id"]) for r in rows)
            for r in rows:
                if sql.PROBE_TAG not in str(r.get("sql_text") or ""):
                    continue
                n, self.records = self.records, self.records + 1
                timer = r.get("timer_wait")
                if n < len(reads) and timer is not None:
                    reads[n] = replace(reads[n], server_seconds=int(timer) / 1e12)
            if self.records >= len(reads) or wait is None:
                break
            time.sleep(wait)

    def close(self, result: ProbeResult) -> None:
        if self.history and self.records < len(result.reads):  # the last read's came late
            self._pair(result.reads)
        end = self._snapshot()
        a, b = self.start, end
        w: dict[str, Any] = {}
        sa, sb = a.get("status"), b.get("status")
        if sa is not None and sb is not None:
            req = _delta(sa, sb, "Innodb_buffer_pool_read_requests")
            disk = _delta(sa, sb, "Innodb_buffer_pool_reads")
            w["pool"] = {
                "read_requests": req,
                "disk_reads": disk,
                "hit_ratio": None if not req or disk is None else round(1 - disk / req, 5),
                "basis": "SHOW GLOBAL STATUS, server-wide over the window",
            }
            if self.walk_pool:
                w["pool"]["table_pages_in_pool"] = {
                    "before": a.get("pool_pages"),
                    "after": b.get("pool_pages"),
                    "table_pages": result.pages,
                    "basis": "information_schema.INNODB_BUFFER_PAGE (the pool is small enough "
                    "to walk)",
                }
            comp = {n: _delta(sa, sb, n) for n in COMPRESSION_STATUS if n in sa}
            w["page_compression"] = comp or None
        ca, cb = a.get("cmp"), b.get("cmp")
        if ca and cb:
            w["row_compression"] = {
                k: _num(cb.get(k)) - _num(ca.get(k))
                for k in ("compress_ops", "uncompress_ops", "uncompress_s")
            }
        if self.pfs:
            w["table_io"] = _row_delta(a.get("table_io"), b.get("table_io"))
            fa = _row_delta(a.get("file_io"), b.get("file_io"))
            fp = _row_delta(a.get("file_io_parts"), b.get("file_io_parts"))
            w["file_io"] = fp if fa is None or (fp and fp.get("files")) else fa
            w["digests"] = _digests(a.get("digests"), b.get("digests"), result)
            own = _row_delta(a.get("own"), b.get("own"))
            w["probe_statements"] = own
            if own is not None and own.get("n"):
                w["probe_statements"]["mean_ms"] = round(own["wait_ps"] / own["n"] / 1e9, 4)
        else:
            result.notes.append(
                "performance_schema is off: no server-side timing, table I/O or digests"
            )
        if self.pfs and not self.history:
            result.notes.append(
                "performance_schema's events_statements_current/_history consumers are not "
                "both on: the latencies are the client's clock only"
            )
        result.window = w


def _int_or_none(x: Any) -> int | None:
    try:
        return int(x)
    except (TypeError, ValueError):
        return None


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _num(x: Any) -> float:
    try:
        return float(x or 0)
    except (TypeError, ValueError):
        return 0.0


def _row_delta(a: dict[str, Any] | None, b: dict[str, Any] | None) -> dict[str, Any] | None:
    if not a or not b:
        return None
    out: dict[str, Any] = {}
    for k, v in b.items():
        if k == "files":
            out[k] = int(v or 0)
            continue
        d = _num(v) - _num(a.get(k))
        out[k] = int(d) if float(d).is_integer() else d
    return out


def _digests(
    a: list[dict[str, Any]] | None, b: list[dict[str, Any]] | None, result: ProbeResult
) -> dict[str, Any] | None:
    """The statements naming the table over the window, by digest: the probe's own shapes
    (theirs carry its count) apart from the others (the workload's)."""
    if a is None or b is None:
        return None
    before = {r["digest"]: r for r in a}
    found: list[dict[str, Any]] = []
    for r in b:
        old = before.get(r["digest"], {})
        n = int(_num(r["n"]) - _num(old.get("n")))
        if n <= 0:
            continue
        wait = _num(r["wait_ps"]) - _num(old.get("wait_ps"))
        text = str(r.get("text") or "")
        found.append({"digest_text": text, "count": n, "mean_ms": round(wait / n / 1e9, 4)})
    found.sort(key=lambda e: -int(e["count"]))
    return {
        "statements": found[:10],
        "probe_ran": len(result.reads),
        "basis": "events_statements_summary_by_digest: the digests naming the table, over the "
        "window; the probe's own statements are among them (probe_ran)",
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if not a or b is None else round(b / a, 3)


def latency_change(before: ProbeResult, after: ProbeResult) -> dict[str, float | None]:
    """After / before, per figure (1.5: 50% slower; rows a second: 0.5 is half as many)."""
    a, b = before.latencies(), after.latencies()
    return {
        "point_p50": _ratio(a["point"].p50, b["point"].p50),
        "point_p99": _ratio(a["point"].p99, b["point"].p99),
        "first_p50": _ratio(a["first"].p50, b["first"].p50),
        "repeat_p50": _ratio(a["repeat"].p50, b["repeat"].p50),
        "range_rows_per_s": _ratio(a["range"].rows_per_s, b["range"].rows_per_s),
        "server_point_p50": _ratio(a["point"].server_p50, b["point"].server_p50),
    }


def latency_text(r: ProbeResult) -> str:
    """One line: the probe's point and range reads (the plan's view of it)."""

    def ms(x: float | None) -> str:
        return "?" if x is None else f"{1000 * x:.2f} ms"

    lat = r.latencies()
    p, cold, rng = lat["point"], lat["cold"], lat["range"]
    parts = [f"point reads p50 {ms(p.p50)}, p99 {ms(p.p99)} ({cold.n} of {p.n} cold)"]
    if p.server_n:
        parts.append(f"server-timed p50 {ms(p.server_p50)}")
    if rng.n and rng.rows_per_s:
        parts.append(f"range reads {rng.rows_per_s:,.0f} rows/s")
    if r.stopped:
        parts.append(f"stopped: {r.stopped}")
    return f"probe ({r.when}): " + "; ".join(parts)


def change_text(before: ProbeResult, after: ProbeResult) -> str:
    """One line: how the reads changed across the conversion."""
    c = latency_change(before, after)

    def x(v: float | None) -> str:
        return "?" if v is None else f"{v:.2f}×"

    text = (
        f"latency after/before: point p50 {x(c['point_p50'])}, p99 {x(c['point_p99'])}; "
        f"first reads p50 {x(c['first_p50'])}, repeats {x(c['repeat_p50'])}"
    )
    if c["server_point_p50"] is not None:
        text += f"; server-timed p50 {x(c['server_point_p50'])}"
    if c["range_rows_per_s"] is not None:
        text += f"; range rows/s {x(c['range_rows_per_s'])}"
    return text
