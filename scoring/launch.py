"""``rolloutscope app``: start the dashboard from any folder, on the bundled sample or on given paths.

The dashboard is a Streamlit app (``app.py``, ``pages/``, ``.streamlit/config.toml``,
``sample_data/``). A checkout has those files at its top level; an installed wheel carries them
in ``dashboard/app_bundle/`` (``setup.py`` copies them there at build time, so the repository
keeps one copy). :func:`app_root` finds them without importing the UI: ``scoring`` never imports
Streamlit or ``dashboard``.

The app runs as ``python -m streamlit run <app root>/app.py [options] -- PATH...`` (Streamlit as a
subprocess, or in place of this process on POSIX). Streamlit reads the ``.streamlit/`` folder
beside the script it runs as well as the one in the working directory, so the installed app gets
the bundled settings (loopback only, the page list, the theme) from any folder, and a
``.streamlit/secrets.toml`` in the folder it is started from turns login on as it does for
``streamlit run app.py``. Paths are made absolute first; ``--data-root`` sets
``ROLLOUTSCOPE_DATA_ROOTS`` for the server. What the app would refuse (a path outside the data
roots, paths with an address beyond loopback and no data roots) is refused here, before the
server starts, with the reason.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .rollouts import ROOTS_ENV, DataAccess, has_wildcards, roots_from_env, split_pattern

#: Where a wheel keeps the app's files, inside the ``dashboard`` package.
APP_BUNDLE = "app_bundle"
APP_SCRIPT = "app.py"
PAGES = "pages"
SAMPLE_DATA = "sample_data"
STREAMLIT_CONFIG = ".streamlit/config.toml"

#: Options ``rolloutscope app`` sets itself (``--host``, ``--port``): not accepted as pass-through.
OWN_STREAMLIT_OPTIONS = {"server.address": "--host", "server.port": "--port"}
#: A Streamlit option on the command line: ``--section.name`` or ``--section.name=value``.
_STREAMLIT_OPTION = re.compile(r"^--([A-Za-z][A-Za-z0-9]*\.[A-Za-z][A-Za-z0-9_.]*)(=.*)?$", re.S)


class LaunchError(Exception):
    """The app cannot be started as asked (one sentence for the user)."""


def app_root(dashboard_dir: str | os.PathLike | None = None) -> Path:
    """The folder holding ``app.py``, ``pages/``, ``.streamlit/`` and ``sample_data/``.

    The checkout's top level when the ``dashboard`` package sits in a checkout (``app.py`` and
    ``pages/`` beside it: a clone, an editable install), else the wheel's ``dashboard/app_bundle``.
    ``dashboard_dir`` defaults to where ``dashboard`` would be imported from (not importing it).
    """
    if dashboard_dir is None:
        spec = importlib.util.find_spec("dashboard")
        locations = list(spec.submodule_search_locations or ()) if spec else []
        if not locations:
            raise LaunchError("the dashboard package is not installed: reinstall rolloutscope")
        dashboard_dir = locations[0]
    package = Path(dashboard_dir).resolve()
    checkout = package.parent
    if (checkout / APP_SCRIPT).is_file() and (checkout / PAGES).is_dir():
        return checkout
    return package / APP_BUNDLE


def is_loopback(address: str | None) -> bool:
    """True when a server bound to ``address`` is reachable only from this machine."""
    text = (address or "").strip().strip("[]")
    if not text:
        return False  # Streamlit listens on every interface when no address is set
    if text.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to a public interface


def split_streamlit_options(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(rolloutscope's arguments, Streamlit's options)``: ``--server.maxUploadSize 200`` and
    ``--theme.base=dark`` go to Streamlit (each of its options takes a value); everything after
    ``--`` is a path."""
    own: list[str] = []
    streamlit: list[str] = []
    items = list(args)
    i = 0
    while i < len(items):
        item = items[i]
        if item == "--":
            own.extend(items[i:])
            break
        match = _STREAMLIT_OPTION.match(item)
        if not match:
            own.append(item)
            i += 1
            continue
        name = match.group(1)
        if name in OWN_STREAMLIT_OPTIONS:
            raise LaunchError(f"use {OWN_STREAMLIT_OPTIONS[name]} instead of --{name}")
        if match.group(2) is not None:
            streamlit.append(item)
            i += 1
            continue
        if i + 1 >= len(items):
            raise LaunchError(f"the Streamlit option --{name} needs a value")
        streamlit.extend((item, items[i + 1]))
        i += 2
    return own, streamlit


@dataclass(frozen=True)
class AppLaunch:
    """What ``rolloutscope app`` runs: the command, its environment, and what it opens."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    app: Path
    paths: tuple[str, ...]
    address: str

    def describe(self) -> str:
        what = "the bundled sample data" if not self.paths else ", ".join(self.paths)
        line = f"rolloutscope: opening {what} (the app from {self.app.parent}); Streamlit prints its URL below"
        if not is_loopback(self.address):
            line += ("\nrolloutscope: the app listens beyond this machine: read 'Serving the app to a team' "
                     "(login, data roots, HTTPS) in the documentation")
        return line


def _bundled_address(root: Path) -> str:
    """``server.address`` of the app's own Streamlit config ("" when it sets none)."""
    try:
        config = tomllib.loads((root / STREAMLIT_CONFIG).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError):
        return ""
    return str(config.get("server", {}).get("address", ""))


def _absolute(text: str, cwd: str) -> str:
    path = os.path.expanduser(text)
    return os.path.normpath(os.path.join(cwd, path))


def _check_path(text: str, path: str, access: DataAccess) -> None:
    if "\n" in text or "\r" in text:
        raise LaunchError(f"{text!r}: a path with a line break cannot be opened")
    where = split_pattern(path)[0] if has_wildcards(path) else Path(path)
    if not access.allows(where):
        raise LaunchError(f"{text}: outside the data roots (allowed: {access.describe_roots()})")
    if not has_wildcards(path) and not os.path.exists(path):
        raise LaunchError(f"{text}: not found")


def plan_app(
    paths: Sequence[str] = (),
    *,
    host: str | None = None,
    port: int | None = None,
    data_roots: Sequence[str] = (),
    streamlit_options: Sequence[str] = (),
    cwd: str | None = None,
    root: Path | None = None,
) -> AppLaunch:
    """Check what was asked and build the command; raises :class:`LaunchError` with the reason."""
    env = dict(os.environ)
    cwd = cwd or os.getcwd()
    root = root or app_root()
    app = root / APP_SCRIPT
    if not app.is_file():
        raise LaunchError(f"the app's files are missing ({app} not found): reinstall rolloutscope")
    roots = [_absolute(r, cwd) for r in data_roots]
    for given, folder in zip(data_roots, roots, strict=True):
        if not os.path.isdir(folder):
            raise LaunchError(f"--data-root {given}: not a folder")
    if roots:  # the flag replaces ROLLOUTSCOPE_DATA_ROOTS for this server
        env[ROOTS_ENV] = os.pathsep.join(roots)
        access = DataAccess(roots=tuple(dict.fromkeys(os.path.realpath(r) for r in roots)))
    else:
        access = DataAccess(roots=roots_from_env())
    absolute = [_absolute(p, cwd) for p in paths]
    for text, path in zip(paths, absolute, strict=True):
        _check_path(text, path, access)
    address = host if host is not None else env.get("STREAMLIT_SERVER_ADDRESS") or _bundled_address(root)
    if absolute and not access.restricted and not is_loopback(address):
        raise LaunchError(
            f"the app would listen beyond this machine ({address or 'every interface'}) with no data roots, "
            "where it reads no server folders (uploads only): give the folders it may read with --data-root DIR"
        )
    argv = [sys.executable, "-m", "streamlit", "run", str(app)]
    if host is not None:
        argv += ["--server.address", host]
    if port is not None:
        argv += ["--server.port", str(port)]
    argv += list(streamlit_options)
    if absolute:
        argv += ["--", *absolute]
    return AppLaunch(tuple(argv), env, app, tuple(absolute), address)


def run_app(launch: AppLaunch) -> int:
    """Run the server until it stops (Ctrl+C). On POSIX Streamlit replaces this process, so a
    signal sent to ``rolloutscope app`` reaches the server itself."""
    print(launch.describe(), flush=True)
    sys.stderr.flush()
    if os.name == "posix":
        os.execve(launch.argv[0], list(launch.argv), dict(launch.env))
    process = subprocess.Popen(list(launch.argv), env=dict(launch.env))  # pragma: no cover (not POSIX)
    try:  # pragma: no cover
        return process.wait()
    except KeyboardInterrupt:  # pragma: no cover: the console sent Ctrl+C to the server too
        return process.wait()


__all__ = [
    "APP_BUNDLE",
    "AppLaunch",
    "LaunchError",
    "app_root",
    "is_loopback",
    "plan_app",
    "run_app",
    "split_streamlit_options",
]
