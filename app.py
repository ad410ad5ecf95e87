"""Rolloutscope (``streamlit run app.py``): the page list; every page lives in ``pages/``.

``st.navigation`` names the first page "Overview" in the sidebar (a plain multipage app
would call it after this file) and keeps each page's URL: ``/`` for the Overview and
``/<Name>`` (``/Inspector``, ``/Format_failures`` …) for the others, as before.
"""

import streamlit as st

PAGES = (
    "pages/1_Inspector.py", "pages/2_Distributions.py", "pages/3_Format_failures.py", "pages/4_Tuning.py",
    "pages/5_Playground.py", "pages/6_Compare.py", "pages/7_Groups.py", "pages/8_Reviews.py", "pages/9_Frames.py",
    "pages/10_Suspects.py",
)

st.navigation([st.Page("pages/0_Overview.py", title="Overview", default=True), *map(st.Page, PAGES)]).run()
