"""Serving safely: the bundled config listens on loopback only; with ``[auth]`` in the secrets every page
shows nothing but a login button until the visitor is signed in, and a verdict is signed by the signed-in
user, never by a typed name. Without ``[auth]`` the app works as before (local use).

The identity provider is simulated: AppTest's ``secrets`` carry the ``[auth]`` section, and
``dashboard.auth.current_user`` (the module's one reader of ``st.user``) is replaced by a fixed identity.
"""

from __future__ import annotations

import hashlib
import ipaddress
import socket
import sys
import tomllib
from pathlib import Path

import pytest
import streamlit
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from dashboard import auth, loading, sources  # noqa: E402
from dashboard import verdicts as vd  # noqa: E402
from dashboard.inspector_extras import K_REVIEWER_W  # noqa: E402

TIMEOUT = 120
TRUE_AUTHLIB_CHECK = auth._authlib_ok  # before the autouse fixture stands in for it
PAGES = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
PROVIDER = {
    "client_id": "rolloutscope-test",
    "client_secret": "not-a-real-secret",
    "server_metadata_url": "https://login.example.invalid/.well-known/openid-configuration",
}
AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 40, **PROVIDER}
ALICE = {"is_logged_in": True, "email": "alice@example.org", "name": "Alice", "sub": "1234"}
GATED_SCRIPT = """
import streamlit as st
from dashboard.state import bootstrap

ctx = bootstrap("Gate")
st.text(f"APP CONTENT: {len(ctx.table)} rows")
"""
EXTRAS_SCRIPT = """
import streamlit as st
from dashboard.state import bootstrap
from dashboard.inspector_extras import render_verdict_form

ctx = bootstrap("Extras")
render_verdict_form(ctx, st.session_state["test_row"])
"""


@pytest.fixture(autouse=True)
def local_data(tmp_path, monkeypatch):
    """The bundled sample, scored in memory; verdicts in a temporary file."""
    monkeypatch.setenv(loading.CACHE_DIR_ENV, "off")
    monkeypatch.setenv(vd.ENV_VAR, str(tmp_path / "verdicts.sqlite"))
    monkeypatch.delenv("ROLLOUTSCOPE_DATA", raising=False)
    monkeypatch.setattr(sys, "argv", ["streamlit"])
    monkeypatch.setattr(auth, "_authlib_ok", lambda: True)  # Authlib is an optional extra
    return tmp_path / "verdicts.sqlite"


@pytest.fixture(scope="module")
def sample_run():
    source = sources.sample_source()
    return loading.load_cached(source)


def as_user(monkeypatch, user: dict) -> None:
    monkeypatch.setattr(auth, "current_user", lambda: user)


def ok(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def with_auth(at: AppTest, section: dict | None = None) -> AppTest:
    at.secrets["auth"] = dict(AUTH if section is None else section)
    return at


def texts(at: AppTest) -> list[str]:
    return [str(t.value) for t in at.text]


def key_of(row_id) -> str:
    return hashlib.sha1(str(row_id).encode("utf-8")).hexdigest()[:10]


# --------------------------------------------------------------------------- the bundled config


def test_bundled_config_listens_on_loopback_only():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    address = config["server"]["address"]
    resolved = {info[4][0] for info in socket.getaddrinfo(address, 8501, proto=socket.IPPROTO_TCP)}
    assert resolved and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in resolved), resolved


def test_secrets_example_is_a_complete_auth_section_and_secrets_are_ignored_by_git():
    example = tomllib.loads((ROOT / ".streamlit" / "secrets.toml.example").read_text())
    assert set(auth.SHARED_KEYS) | set(auth.PROVIDER_KEYS) <= set(example["auth"])
    assert ".streamlit/secrets.toml" in (ROOT / ".gitignore").read_text().splitlines()


# --------------------------------------------------------------------------- whether login is on


class _Secrets(dict):
    """Stands in for ``st.secrets``; ``missing`` raises like Streamlit does without a secrets file."""

    def __init__(self, data=None, *, missing=False):
        super().__init__(data or {})
        self.missing = missing

    def get(self, key, default=None):
        if self.missing:
            raise FileNotFoundError("No secrets found.")
        return super().get(key, default)


@pytest.mark.parametrize(
    ("secrets", "providers", "problem"),
    [
        (_Secrets(missing=True), None, None),
        (_Secrets({"other": {"token": "x"}}), None, None),
        (_Secrets({"auth": AUTH}), ("",), ""),
        (_Secrets({"auth": {**{k: AUTH[k] for k in auth.SHARED_KEYS}, "okta": PROVIDER, "google": PROVIDER}}),
         ("google", "okta"), ""),
        (_Secrets({"auth": {**AUTH, "okta": PROVIDER}}), ("", "okta"), ""),
        (_Secrets({"auth": {k: v for k, v in AUTH.items() if k != "cookie_secret"}}), (), "cookie_secret"),
        (_Secrets({"auth": {**AUTH, "client_secret": ""}}), (), "names no complete provider"),
        (_Secrets({"auth": "yes"}), (), "must be a section"),
    ],
)
def test_auth_config(monkeypatch, secrets, providers, problem):
    monkeypatch.setattr(streamlit, "secrets", secrets)
    config = auth.auth_config()
    if providers is None:
        assert config is None
    else:
        assert config.providers == providers and problem in config.problem and bool(config.problem) == bool(problem)


def test_an_unreadable_secrets_file_keeps_the_app_closed(monkeypatch, tmp_path):
    broken = tmp_path / "secrets.toml"
    broken.write_text("[auth\nredirect_uri = ")
    monkeypatch.setattr(streamlit, "secrets", _Secrets(missing=True))
    monkeypatch.setattr(streamlit, "get_option", lambda name: [str(broken)])
    assert "could not be read" in auth.auth_config().problem


def test_authlib_missing_keeps_the_app_closed(monkeypatch):
    monkeypatch.setattr(streamlit, "secrets", _Secrets({"auth": AUTH}))
    monkeypatch.setattr(auth, "_authlib_ok", lambda: False)
    assert "rolloutscope[auth]" in auth.auth_config().problem


# --------------------------------------------------------------------------- the gate on every page


def test_without_auth_the_app_opens_as_before(sample_run, monkeypatch):
    as_user(monkeypatch, {})
    at = ok(AppTest.from_string(GATED_SCRIPT, default_timeout=TIMEOUT).run())
    assert any(t.startswith("APP CONTENT") for t in texts(at))
    assert not [b for b in at.button if b.label.startswith("Log in")]
    assert not any(t.startswith("Signed in as") for t in texts(at))


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_with_auth_every_page_shows_nothing_but_a_login_button(page, monkeypatch):
    as_user(monkeypatch, {"is_logged_in": False})
    at = ok(with_auth(AppTest.from_file(str(page), default_timeout=TIMEOUT)).run())
    assert [b.label for b in at.button] == ["Log in"]
    assert texts(at) == ["Sign in to use this app."]
    assert [t.value for t in at.title] == ["Rolloutscope"]
    assert len(at.sidebar.children) == 0  # no data chooser, no file names
    for kind in ("radio", "text_input", "dataframe", "metric", "selectbox", "markdown", "caption", "error"):
        assert not list(getattr(at, kind)), kind


def test_the_login_button_starts_the_providers_login(monkeypatch):
    as_user(monkeypatch, {"is_logged_in": False})
    started: list[tuple] = []
    monkeypatch.setattr(streamlit, "login", lambda *args: started.append(args))
    section = {**{k: AUTH[k] for k in auth.SHARED_KEYS}, "okta": PROVIDER, "google": PROVIDER}
    at = ok(with_auth(AppTest.from_string(GATED_SCRIPT, default_timeout=TIMEOUT), section).run())
    assert [b.label for b in at.button] == ["Log in with google", "Log in with okta"]
    next(b for b in at.button if b.label == "Log in with okta").click()
    ok(at.run())
    assert started == [("okta",)]


def test_a_broken_login_setup_shows_why_and_nothing_else(monkeypatch):
    as_user(monkeypatch, ALICE)
    section = {k: v for k, v in AUTH.items() if k != "redirect_uri"}
    at = ok(with_auth(AppTest.from_string(GATED_SCRIPT, default_timeout=TIMEOUT), section).run())
    assert len(at.error) == 1 and "redirect_uri" in at.error[0].value
    assert not texts(at) and not list(at.button)


def test_a_signed_in_user_sees_the_app_and_can_log_out(sample_run, monkeypatch):
    as_user(monkeypatch, ALICE)
    logged_out: list[bool] = []
    monkeypatch.setattr(streamlit, "logout", lambda: logged_out.append(True))
    at = ok(with_auth(AppTest.from_string(GATED_SCRIPT, default_timeout=TIMEOUT)).run())
    assert f"APP CONTENT: {len(sample_run.table)} rows" in texts(at)
    assert "Signed in as alice@example.org" in [str(t.value) for t in at.sidebar.text]
    at.sidebar.button(key="rs_logout").click()
    ok(at.run())
    assert logged_out == [True]


# --------------------------------------------------------------------------- who signs a verdict


def save_verdict(at: AppTest, row_id, verdict: str) -> AppTest:
    at.radio(key=f"rv_verdict_{key_of(row_id)}").set_value(verdict)
    next(b for b in at.button if b.label == "Save verdict").click()
    return ok(at.run())


def test_the_signed_in_user_signs_the_verdict_whatever_is_typed(sample_run, monkeypatch, local_data):
    as_user(monkeypatch, ALICE)
    row_id = sample_run.table.index[0]
    at = with_auth(AppTest.from_string(EXTRAS_SCRIPT, default_timeout=TIMEOUT))
    at.session_state["test_row"] = row_id
    at.session_state[K_REVIEWER_W] = "mallory"  # a name slipped into the session is ignored
    ok(at.run())
    assert "Reviewer: alice@example.org (signed in)" in texts(at)
    assert not [w for w in at.text_input if w.label == "Reviewer"]
    save_verdict(at, row_id, vd.GT_WRONG)
    saved = vd.VerdictStore(local_data).current(row_id)
    assert saved.verdict == vd.GT_WRONG and saved.reviewer == "alice@example.org"


def test_a_user_without_an_email_signs_with_their_name(sample_run, monkeypatch, local_data):
    as_user(monkeypatch, {"is_logged_in": True, "name": "Bob", "sub": "42"})
    row_id = sample_run.table.index[1]
    at = with_auth(AppTest.from_string(EXTRAS_SCRIPT, default_timeout=TIMEOUT))
    at.session_state["test_row"] = row_id
    save_verdict(ok(at.run()), row_id, vd.UNCLEAR)
    assert vd.VerdictStore(local_data).current(row_id).reviewer == "Bob"


def test_without_auth_the_typed_name_signs_the_verdict(sample_run, monkeypatch, local_data):
    as_user(monkeypatch, {})
    row_id = sample_run.table.index[2]
    at = AppTest.from_string(EXTRAS_SCRIPT, default_timeout=TIMEOUT)
    at.session_state["test_row"] = row_id
    ok(at.run())
    at.text_input(key=K_REVIEWER_W).input("carol")
    save_verdict(at, row_id, vd.MODEL_WRONG)
    assert vd.VerdictStore(local_data).current(row_id).reviewer == "carol"


def test_verdict_reviewer_refuses_when_login_is_on_and_nobody_is_signed_in(monkeypatch):
    monkeypatch.setattr(streamlit, "secrets", _Secrets({"auth": AUTH}))
    as_user(monkeypatch, {"is_logged_in": False})
    with pytest.raises(PermissionError):
        auth.verdict_reviewer("mallory")
    as_user(monkeypatch, ALICE)
    assert auth.verdict_reviewer("mallory") == "alice@example.org"
    monkeypatch.setattr(streamlit, "secrets", _Secrets(missing=True))
    assert auth.verdict_reviewer("  carol ") == "carol"


def test_reviews_page_says_who_is_signed_in(sample_run, monkeypatch):
    as_user(monkeypatch, ALICE)
    at = ok(with_auth(AppTest.from_file(str(ROOT / "pages" / "9_Reviews.py"), default_timeout=TIMEOUT)).run())
    shown = [c.value.replace("\\", "") for c in at.caption]
    assert any(c.startswith("Signed in as alice@example.org") for c in shown), shown


@pytest.mark.parametrize(("version", "usable"), [("1.3.1", False), ("1.3.2", True), ("1.6.0", True), (None, False)])
def test_authlib_floor(monkeypatch, version, usable):
    import importlib.metadata

    def installed(name):
        assert name == "Authlib"
        if version is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return version

    monkeypatch.setattr(importlib.metadata, "version", installed)
    monkeypatch.setattr(auth, "_authlib_ok", TRUE_AUTHLIB_CHECK)
    assert auth._authlib_ok() is usable
