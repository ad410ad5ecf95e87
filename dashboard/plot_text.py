"""Text from data, made safe for plotly labels.

Plotly renders a subset of HTML in every label it draws -- titles, trace names
(legends), hover text, axis and category tick labels, annotations, colorbar
titles: ``<a href>`` becomes a live link, ``<b>`` bold, ``<br>`` a line break.
In ``hovertemplate`` (and ``texttemplate``) it also substitutes ``%{...}``
placeholders. Data must never be read as either, so every label that comes from
data goes through :func:`plotly_text` (or :func:`plotly_texts` for a column)
before it reaches a figure: ``&``, ``<`` and ``>`` become HTML entities, and
``%`` becomes ``&#37;`` so no ``%{...}`` can form. Plotly decodes entities when
it draws, so the reader sees the original text, literally.

Data never goes *into* a template string: templates reference
``customdata``/``text`` columns holding escaped text (``%{customdata[4]}``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

#: Replacements, in order (``&`` first, so the entities added after it stay intact).
_ESCAPES: tuple[tuple[str, str], ...] = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("%", "&#37;"))


def plotly_text(value: Any) -> str:
    """``value`` as a plotly label that renders as literal text (no markup, no template)."""
    text = str(value)
    for raw, entity in _ESCAPES:
        text = text.replace(raw, entity)
    return text


def plotly_texts(values: Iterable[Any]) -> list[str]:
    """:func:`plotly_text` of every value (vectorised for a pandas Series or array)."""
    series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    text = series.map(str).astype(object)  # str() of every value, as plotly_text does (None -> "None")
    for raw, entity in _ESCAPES:
        text = text.str.replace(raw, entity, regex=False)
    return text.tolist()


__all__ = ["plotly_text", "plotly_texts"]
