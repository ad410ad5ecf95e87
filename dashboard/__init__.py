"""Rolloutscope's dashboard view-model: everything the Streamlit pages need, testable without Streamlit.

Arrows run one way: ``pages -> dashboard -> scoring``.

- :mod:`.sources`     data sources (sample, uploads, local folder/glob, scored dataset), what may be read, file classification
- :mod:`.loading`     a data source -> one scored table, opened and cached by content
- :mod:`.tuning`      the current options, re-weighting (via :mod:`scoring.runs.reweighting`), before/after comparison
- :mod:`.filters`     summaries and row selections over the scored table
- :mod:`.figures`     plotly figures (pre-binned histograms, step curves, deltas)
- :mod:`.formatting`  the format-failure view-model (where the format broke, what was recovered)
- :mod:`.state`       the one Streamlit-aware module: ``bootstrap()`` every page calls first
"""
