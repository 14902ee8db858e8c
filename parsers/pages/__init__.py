"""Named fields and labelled byte regions of one page, one module per page family.

innodb_ruby keeps a page family per file (``lib/innodb/page/*.rb``) and its pages yield
``(offset, length, name)`` regions that drive its illustrations; this package does the same for
the two images a page view shows. :func:`stored_layout` lays out the image as the file holds it
(FIL header, then the compression envelope or the trailer; :mod:`.stored`), and
:func:`logical_layout` the decompressed page: its FIL frame (:mod:`.fil`), then what the page's
family declares, found through :data:`PAGE_FAMILIES` (:mod:`.logical`). Pure decoding: bytes and
the :class:`~ibdtool.parsers.page.PageInfo` of :func:`~ibdtool.parsers.page.decode_page` in, frozen
records (:mod:`.base`) out.

Families: :mod:`.index` (INDEX, RTREE, SDI, INSTANT), :mod:`.fsp` (FSP_HDR, XDES),
:mod:`.inode` (INODE), :mod:`.blob` (BLOB, MySQL SDI_BLOB). Other types show their frame only.

The family contract — to add a page type, copy a family module (``blob.py`` is the smallest):

* a module docstring naming the page types and the FORMATS.md section;
* ``page_types(vendor: Vendor) -> frozenset[int]``: the FIL_PAGE_TYPE codes the family lays out
  for that vendor (a code may mean different things to MySQL and MariaDB, as 18 does); no two
  families may claim a code for the same vendor (checked when :mod:`.logical` is imported);
* ``layout(page, info, fmt) -> (groups, regions)``: the :class:`FieldGroup` list and the
  :class:`Region` list of the page body, between the FIL header and the trailer, which the
  caller adds; it must not raise on a damaged body (regions are clipped to the page);
* every field's offset and size come from its construct declaration in
  :mod:`ibdtool.parsers.structs` through :func:`~ibdtool.parsers.pages.base.spans` and
  :func:`~ibdtool.parsers.pages.base.field` — declare a missing structure there first, citing its
  section;
* add the module to ``FAMILIES`` in :mod:`.logical` and a line to the list above.
"""

from ibdtool.parsers.pages.base import REGION_NAMES, Field, FieldGroup, Layout, Region, region_at
from ibdtool.parsers.pages.logical import PAGE_FAMILIES, logical_layout
from ibdtool.parsers.pages.stored import stored_layout

__all__ = [
    "PAGE_FAMILIES",
    "REGION_NAMES",
    "Field",
    "FieldGroup",
    "Layout",
    "Region",
    "logical_layout",
    "region_at",
    "stored_layout",
]
