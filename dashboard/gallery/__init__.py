"""The Gallery: a whole run swept by eye, as a grid of overlay thumbnails (no Streamlit here).

=================  =====================================================================
module             what it does
=================  =====================================================================
``ordering``       sort values, sorting by position (never copying text), image groups, pages
``patches``        one tile per object: a row's TP / FN / FP objects, counted as rows are explained
``render``         the thumbnails, drawn with Pillow at the tile's size
``cache``          thumbnails on disk, bounded in bytes, least recently used removed first
``tiles``          a page: its tiles, numbers, badges and thumbnails (from the cache or drawn)
``suspects``       the GT-suspect confidence of every row (the Suspects page's rule)
``view``           the view as link parameters; the links between the Gallery and the Inspector
=================  =====================================================================

``pages/2_Gallery.py`` lays these out.
"""

from .cache import ThumbnailCache, cache_for
from .ordering import MODE_IMAGES, MODE_PATCHES, MODE_ROWS, MODES
from .tiles import GalleryPage, GalleryView, PageInputs, Tile, build_page

__all__ = [
    "MODES",
    "MODE_IMAGES",
    "MODE_PATCHES",
    "MODE_ROWS",
    "GalleryPage",
    "GalleryView",
    "PageInputs",
    "ThumbnailCache",
    "Tile",
    "build_page",
    "cache_for",
]
