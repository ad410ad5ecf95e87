"""The sidebar's page list: Overview first, every page of pages/ in order, Streamlit's own list hidden."""

from __future__ import annotations

import tomllib
from pathlib import Path

from dashboard import navigation

ROOT = Path(__file__).resolve().parents[2]


def test_the_overview_comes_first_then_every_page_by_its_number():
    listed = navigation.pages()
    assert listed[0] == ("app.py", "Overview")
    files = sorted(ROOT.glob("pages/*.py"), key=lambda p: int(p.name.split("_")[0]))
    assert [path for path, _ in listed[1:]] == [f"pages/{p.name}" for p in files]
    assert [label for _, label in listed][:6] == ["Overview", "Inspector", "Gallery", "Distributions", "Format failures",
                                                  "Tuning"]
    assert listed[-1] == ("pages/11_Suspects.py", "Suspects")  # 11 sorts after 9, as Streamlit orders pages


def test_labels_are_the_names_streamlit_routes_by():
    assert navigation.page_label("pages/4_Format_failures.py") == "Format failures"
    assert navigation.page_label("pages/11_Suspects.py") == "Suspects"
    assert navigation.page_label("pages/Plain.py") == "Plain"


def test_streamlits_own_list_is_hidden():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showSidebarNavigation"] is False


def test_every_page_links_from_the_sidebar_under_its_own_url():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    assert not at.exception
    links = [(link.proto.label, link.proto.page) for link in at.get("page_link")]
    assert links[0] == ("Overview", "")  # the app's root URL
    assert links[1:] == [(label, label.replace(" ", "_")) for _, label in navigation.pages()[1:]]
