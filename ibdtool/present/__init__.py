"""Words and pictures for the front ends (the CLI and the TUI), without Rich or Textual.

- ``text``: numbers in words: sizes, counts, durations, intervals; and ``shown``, the one
  escaping of outside text (names, values, messages) every front end prints through.
- ``describe``: inspect and simulate results in words.
- ``pagemap``: a page map as a static picture: categories, cells, legend, SVG.
- ``palette``: the colours pages are drawn in, the same in every picture.

Uses :mod:`ibdtool.tablespace` and :mod:`ibdtool.advise`, never :mod:`ibdtool.cli`.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ibdtool.present.describe import (
        cost_note,
        cost_text,
        current_state_text,
        disk_text,
        drop_note,
        format_rows,
        inspect_rows,
        rebuild_text,
        recommendation_text,
        scenario_label,
        simulation_heading,
    )
    from ibdtool.present.pagemap import PageMap, map_path, sampled_types, svg
    from ibdtool.present.palette import (
        EMPTY_COLOR,
        FULL_COLOR,
        HOLE_COLOR,
        INDEX_PALETTE,
        OTHER_COLOR,
        PARTIAL_COLOR,
        UNPUNCHED_COLOR,
        UNREAD_COLOR,
        compression_color,
        type_color,
    )
    from ibdtool.present.text import (
        ci_text,
        hms,
        human_bytes,
        is_safe,
        json_shown,
        range_text,
        seconds_text,
        shown,
        shown_offsets,
        shown_spans,
        us_text,
    )
else:
    from ibdtool.exports import lazy

    __getattr__, __dir__ = lazy(
        __name__,
        {
            "describe": (
                "cost_note cost_text current_state_text disk_text drop_note format_rows "
                "inspect_rows "
                "rebuild_text recommendation_text scenario_label simulation_heading"
            ),
            "pagemap": "PageMap map_path sampled_types svg",
            "palette": (
                "EMPTY_COLOR FULL_COLOR HOLE_COLOR INDEX_PALETTE OTHER_COLOR PARTIAL_COLOR "
                "UNPUNCHED_COLOR UNREAD_COLOR compression_color type_color"
            ),
            "text": (
                "ci_text hms human_bytes is_safe json_shown range_text seconds_text shown "
                "shown_offsets shown_spans us_text"
            ),
        },
    )
