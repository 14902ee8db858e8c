"""Text from outside (file, table, index, column names; server and error messages) made safe
for a Textual widget: taken literally, never as markup, with the control characters a
terminal would obey shown escaped by :func:`ibdtool.text.shown` (the one helper every front
end uses)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from ibdtool.present import shown, shown_spans


def safe(text: str | Text = "", style: str = "", **kwargs: Any) -> Text:
    """``text`` as a Rich :class:`Text` a widget shows literally: a string (one name or
    message) is not read as markup and has every control character escaped, its newlines too
    (``kwargs`` go to :class:`Text`); a :class:`Text` keeps its line breaks and styles."""
    if isinstance(text, str):  # escaped before Rich sees it: Text() drops BEL, BS, VT, FF, CR
        return Text(shown(text), style=style, **kwargs)
    elif style:
        text = text.copy()
        text.stylize(style)
    moved = shown_spans(text.plain, [(s.start, s.end) for s in text.spans])
    if moved is None:
        return text
    new = text.blank_copy(moved[0])
    for span, (start, end) in zip(text.spans, moved[1], strict=True):
        new.stylize(span.style, start, end)
    return new
