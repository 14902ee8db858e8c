"""Pure InnoDB format decoding: bytes in, typed records out. No I/O policy, no printing.

Depends on nothing else in this repository. Module map, and where a new thing goes:

- Declarations: ``structs`` (every on-disk structure, construct; the read path uses
  ``_structs_gen``, generated from it by ``scripts/gen_structs.py``, never edited),
  ``constants`` (page types, special values), ``errors``
  (:class:`~ibdtool.parsers.errors.ParseError`, the one base), ``vendor`` (which server family).
- Tablespace and page: ``space`` (facts from page 0), ``flags`` (FSP flags), ``envelope``
  (what wraps a stored page: kind, algorithm, stored size, payload, checksum scope),
  ``inflate`` (the page inside a compressed image), ``page`` (one page decoded), ``index_fill``
  (an index page's fill from its header), ``checksum``,
  ``crc32c_fast``, ``layout`` (how each server lays a compressed image into its slot),
  ``xdes`` (free extents).
- Page families: ``pages/`` — one module per family behind ``PAGE_FAMILIES``; **a new page
  type** is one module there (copy ``pages/blob.py``).
- Codecs: ``codecs`` (the registry) over ``codecimpl`` and ``syslibs``; **a new codec** is one
  declaration in ``codecs``.
- ROW_FORMAT=COMPRESSED: ``zip_page`` (pages rebuilt in full), ``compact_rec``.
- Rows: ``tabledef`` (record layout) from ``sdi_table`` / ``cfg`` / ``ddl``; ``records``,
  ``columns``, ``charsets``, ``jsonb``, ``lob``; ``sdi`` (the SDI B-tree).
- Encryption: ``cryptinfo`` (page 0's crypt data / encryption info, read for every file),
  ``keyring`` (key files) and ``crypt`` (page decryption), when present.
- Names: ``filename`` (identifiers ↔ file names).
"""

# installed as ibdtool.parsers (docs/layout.md, "Installed names"); a checkout's root on sys.path
# would also let `import parsers` load every module a second time, under names no install has
if __name__ != "ibdtool.parsers":
    raise ImportError(
        f"import ibdtool.parsers, not {__name__} (parsers/ is installed under ibdtool)"
    )
