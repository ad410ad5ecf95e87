"""The login gate: with an ``[auth]`` section in ``.streamlit/secrets.toml`` every page asks for login first.

Streamlit's built-in authentication (``st.login`` / ``st.user`` / ``st.logout``,
an OpenID Connect provider) does the work; this module decides whether it is
on, stops every page at a login button until the visitor is signed in, and
says who signs a verdict::

    from dashboard import auth
    auth.require_login()            # first thing in state.bootstrap (every page)
    auth.verdict_reviewer(typed)    # the signed-in user when auth is on, else what was typed

Without an ``[auth]`` section (local use) nothing changes: no login, and the
reviewer's name is typed in the review form. A present but unusable section
(missing keys, Authlib not installed, an unreadable secrets file) stops the
app with a message instead of opening it: a typo must not turn the login off.
See docs/serving.md.
"""

from __future__ import annotations

import importlib.metadata
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import streamlit as st

AUTH_SECTION = "auth"
#: Keys every ``[auth]`` section needs (Streamlit's own requirement).
SHARED_KEYS = ("redirect_uri", "cookie_secret")
#: Keys of one OIDC provider: directly in ``[auth]`` (the default provider) or in ``[auth.<name>]``.
PROVIDER_KEYS = ("client_id", "client_secret", "server_metadata_url")
#: Streamlit's login needs at least this Authlib (``pip install rolloutscope[auth]``).
AUTHLIB_FLOOR = (1, 3, 2)
#: Claims tried, in order, to name the signed-in user.
IDENTITY_CLAIMS = ("email", "name", "preferred_username", "sub")
DEFAULT_PROVIDER = ""


@dataclass(frozen=True)
class AuthConfig:
    """Authentication is on. ``providers``: names for ``st.login`` (``""`` is the default provider);
    ``problem``: why login cannot work (the app then stays closed), ``""`` when it can."""

    providers: tuple[str, ...]
    problem: str = ""


def _secrets_file_exists() -> bool:
    return any(os.path.exists(path) for path in st.get_option("secrets.files") or ())


def _authlib_ok() -> bool:
    try:
        version = importlib.metadata.version("Authlib")
    except importlib.metadata.PackageNotFoundError:
        return False
    parts = tuple(int(p) for p in version.split(".")[:3] if p.isdigit())
    return parts >= AUTHLIB_FLOOR


def auth_config() -> AuthConfig | None:
    """None when authentication is off (no ``[auth]`` section); else the providers, or the problem."""
    try:
        section = st.secrets.get(AUTH_SECTION)
    except FileNotFoundError:  # Streamlit's "no secrets" -- or a secrets file it could not parse
        if _secrets_file_exists():
            return AuthConfig((), "The secrets file (`.streamlit/secrets.toml`) could not be read, so the login "
                                  "cannot be checked. Fix the file and restart the app.")
        return None
    if not section:
        return None
    if not isinstance(section, Mapping):
        return AuthConfig((), "`[auth]` in `.streamlit/secrets.toml` must be a section (a table).")
    missing = [key for key in SHARED_KEYS if not section.get(key)]
    if missing:
        return AuthConfig((), f"`[auth]` in `.streamlit/secrets.toml` lacks `{'`, `'.join(missing)}`.")
    providers = [DEFAULT_PROVIDER] if all(section.get(k) for k in PROVIDER_KEYS) else []
    providers += sorted(name for name, value in section.items()
                        if isinstance(value, Mapping) and all(value.get(k) for k in PROVIDER_KEYS))
    if not providers:
        return AuthConfig((), "`[auth]` in `.streamlit/secrets.toml` names no complete provider: it needs "
                              f"`{'`, `'.join(PROVIDER_KEYS)}` (directly, or in an `[auth.NAME]` section).")
    if not _authlib_ok():
        return AuthConfig(tuple(providers), "Login is configured but Authlib is missing: install it with "
                                            "`pip install 'rolloutscope[auth]'` and restart the app.")
    return AuthConfig(tuple(providers))


def current_user() -> Mapping[str, Any]:
    """Streamlit's ``st.user`` (a mapping of the identity provider's claims plus ``is_logged_in``)."""
    return st.user


def _user_name() -> str | None:
    """The logged-in visitor's email (else name, username or subject); None when not logged in."""
    user = current_user()
    if not user.get("is_logged_in"):
        return None
    for claim in IDENTITY_CLAIMS:
        value = user.get(claim)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def signed_in_user() -> str | None:
    """Who is signed in, when authentication is on; None when it is off or nobody is signed in."""
    config = auth_config()
    return _user_name() if config is not None and not config.problem else None


def verdict_reviewer(typed: str = "") -> str:
    """Who signs a verdict: with authentication on, the signed-in user (``typed`` is ignored: nobody
    signs as someone else); without it, the name typed in the form. PermissionError when
    authentication is on and nobody is signed in."""
    if auth_config() is None:
        return (typed or "").strip()
    user = signed_in_user()
    if user is None:
        raise PermissionError("Sign in to give verdicts; nothing was saved.")
    return user


def _log_in(provider: str) -> None:
    if provider:
        st.login(provider)
    else:
        st.login()


def require_login(title: str) -> str | None:
    """Stop the page at a login button until the visitor is signed in (when authentication is on).

    Returns the signed-in user (shown in the sidebar with a log-out button), or None
    when authentication is off. Nothing of the app is drawn before the login.
    """
    config = auth_config()
    if config is None:
        return None
    if config.problem:
        st.title(title)
        st.error(config.problem)  # our own sentence (Markdown: file and key names as code)
        st.stop()
    user = _user_name()
    if user is None:
        st.title(title)
        st.text("Sign in to use this app.")
        for provider in config.providers:
            label = f"Log in with {provider}" if provider else "Log in"
            st.button(label, key=f"rs_login_{provider or 'default'}", type="primary", on_click=_log_in,
                      args=(provider,))
        st.stop()
    st.sidebar.text(f"Signed in as {user}")
    st.sidebar.button("Log out", key="rs_logout", on_click=st.logout)
    return user
