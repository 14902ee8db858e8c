"""Server dialects: everything that differs between server lines, one file per line.

**A new server line = one file here.** Subclass :class:`~ibdtool.server.dialects.base.Dialect`
(or the line it derives from, as :mod:`.percona` does :mod:`.mysql`), set ``name`` (the
:class:`ibdtool.parsers.vendor.Vendor` whose file format it writes) and ``product`` (its label), and
answer what differs from the base; then list it in :data:`DIALECTS`, before any line that would
also claim it. The contract, each a method or property of the dialect:

* identity: ``claims(version, comment)`` (is a server reporting this ``VERSION()`` and
  ``@@version_comment`` this line?), ``version_numbers`` (x.y.z out of ``VERSION()``),
  ``label``;
* version gates: ``catalog`` (which InnoDB catalog the server has), ``names_as_written``,
  ``has_read_only_compressed``, ``has_file_format``, ``partition_separator``;
* the SQL that differs by line or version (:mod:`ibdtool.server.sql` holds only what every
  line answers alike): ``tablespaces_query``, ``tablespace_by_name_query``,
  ``indexes_of_space_query``, ``innodb_tables_query`` (the catalog views),
  ``dirty_pages_query`` and ``dirty_above`` (the buffer pool's unwritten pages),
  ``replica_hosts_query``, ``replica_status_query`` and ``replica_status_columns`` (SHOW
  SLAVE … or SHOW REPLICA…, by version, for ``--max-lag``);
* codecs: ``page_codecs`` (what ``page:<codec>`` may name), ``codec_plugin`` (the plugin a
  codec needs loaded), ``codec_status`` (the status variable saying whether it is);
* the SQL of a conversion: ``rebuild_steps`` (the statements for a target, given the table's
  options and the server's variables), ``online`` (its ALGORITHM/LOCK clauses),
  ``page_compression_is_attribute``, ``table_compression_level``, ``compresses_rtree``,
  ``fulltext_rebuild``, ``plan_notes``, ``writes_take_global_codec``;
* progress: ``processlist_progress`` and ``process_query`` (a thread's PROCESSLIST row).

The planner, preflight checks, executor and progress code ask the dialect and never test which
server they talk to, nor parse a version string. One dialect instance per connection:
``Server.flavor``, from :func:`parse_flavor`.
"""

from __future__ import annotations

import re

from ibdtool.server.dialects.base import Dialect
from ibdtool.server.dialects.mariadb import MariaDB
from ibdtool.server.dialects.mysql import MySQL
from ibdtool.server.dialects.percona import Percona

#: Most specific first: the first line that claims a server is its dialect (MySQL claims all).
DIALECTS: tuple[type[Dialect], ...] = (MariaDB, Percona, MySQL)

_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_flavor(version: str, comment: str = "") -> Dialect:
    """``VERSION()`` and ``@@version_comment`` → the dialect of that server at that version."""
    line = next(d for d in DIALECTS if d.claims(version, comment))
    m = _VERSION.search(version)
    numbers = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (0, 0, 0)
    if m:
        numbers = line.version_numbers(version, numbers)
    return line(numbers, version, comment)


__all__ = ["DIALECTS", "Dialect", "MariaDB", "MySQL", "Percona", "parse_flavor"]
