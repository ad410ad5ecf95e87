"""The wheel, installed as a tool is (``pip install``, not editable), into a fresh venv.

One wheel per session (the ``installed_wheel`` fixture, about a minute of compiling on two
cores, seconds from the test command's ccache). It must carry every Cython declaration and the
app's files; every compiled layer must load compiled (never pure Python, never stale) from the
installed package; and ``rolloutscope app PATH`` started from an empty folder must serve the app
with the bundled settings. The browser check of the same install is
``tests/e2e/test_browser_wheel.py``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
import zipfile
from pathlib import Path

import pytest
from live_server import free_port, serve

from dashboard import sources
from scoring import compiled
from scoring.launch import APP_BUNDLE

pytestmark = pytest.mark.wheel

REPO = Path(__file__).resolve().parents[1]
BUNDLE = f"dashboard/{APP_BUNDLE}/"


def wheel_files(installed) -> dict[str, zipfile.ZipInfo]:
    with zipfile.ZipFile(installed.wheel) as archive:
        return {info.filename: info for info in archive.infolist()}


def wheel_bytes(installed, name: str) -> bytes:
    with zipfile.ZipFile(installed.wheel) as archive:
        return archive.read(name)


def test_the_wheel_carries_every_declaration_and_every_compiled_layer(installed_wheel):
    names = wheel_files(installed_wheel)
    declarations = {p.relative_to(REPO).as_posix() for p in (REPO / "scoring").rglob("*.pxd")}
    assert declarations, "the checkout declares its compiled types in .pxd files"
    assert declarations <= names.keys(), sorted(declarations - names.keys())
    for layer in compiled.COMPILED_LAYERS:
        stem = "scoring/" + layer.replace(".", "/") + "."
        extensions = [n for n in names if n.startswith(stem) and n.endswith((".so", ".pyd"))]
        assert len(extensions) == 1, (layer, extensions)
        assert extensions[0] + compiled.SOURCE_DIGEST_SUFFIX in names, layer
        assert stem + "py" in names, layer  # the source the digest is checked against


def test_the_wheel_carries_the_app_as_the_checkout_has_it(installed_wheel):
    names = wheel_files(installed_wheel)
    bundled = {name[len(BUNDLE):] for name in names if name.startswith(BUNDLE)}
    scripts = ["app.py", ".streamlit/config.toml", *(f"pages/{p.name}" for p in (REPO / "pages").glob("*.py"))]
    for script in scripts:  # the same files, byte for byte: one copy in the repository
        assert wheel_bytes(installed_wheel, BUNDLE + script) == (REPO / script).read_bytes(), script
    assert {n for n in bundled if n.startswith("pages/")} == {s for s in scripts if s.startswith("pages/")}
    sample = [*sources.find_rollout_files(REPO / "sample_data"), *(REPO / "sample_data" / "images").iterdir()]
    assert len(sample) > 40
    for path in sample:
        relative = path.relative_to(REPO).as_posix()
        assert relative in bundled, relative
        assert wheel_bytes(installed_wheel, BUNDLE + relative) == path.read_bytes(), relative
    not_data = sorted(n for n in bundled if n.startswith("sample_data/") and n.endswith((".py", ".md")))
    assert not not_data, "the sample's generator stays in the repository"
    assert not [n for n in names if n.endswith("secrets.toml")]


def test_every_layer_loads_compiled_from_the_installed_wheel(installed_wheel, tmp_path):
    script = (
        "import importlib, json, warnings\n"
        "warnings.simplefilter('error', RuntimeWarning)\n"  # a stale layer warns: fail on it
        "import scoring, dashboard\n"
        "from scoring import compiled, launch\n"
        "for layer in compiled.COMPILED_LAYERS:\n"
        "    importlib.import_module('scoring.' + layer)\n"
        "print(json.dumps({'scoring': scoring.__file__, 'dashboard': dashboard.__file__,\n"
        "                  'status': compiled.layer_status(), 'app': str(launch.app_root())}))\n"
    )
    done = subprocess.run([str(installed_wheel.python), "-c", script], cwd=tmp_path, env=installed_wheel.env(),
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]  # e.g. "scoring.batch: pure Python (source changed ...)"
    found = json.loads(done.stdout)
    venv = installed_wheel.venv.resolve()
    assert Path(found["scoring"]).resolve().is_relative_to(venv), found["scoring"]
    assert Path(found["dashboard"]).resolve().is_relative_to(venv), found["dashboard"]
    assert found["status"] == dict.fromkeys(compiled.COMPILED_LAYERS, compiled.COMPILED)
    assert Path(found["app"]) == Path(found["dashboard"]).resolve().parent / APP_BUNDLE


def test_rolloutscope_app_serves_a_path_from_an_empty_folder(installed_wheel, tmp_path):
    run = tmp_path / "runs" / "exp1"
    shutil.copytree(REPO / "sample_data" / "verl", run)
    empty, home = tmp_path / "empty", tmp_path / "home"
    empty.mkdir()
    home.mkdir()
    port = free_port()
    command = [str(installed_wheel.rolloutscope), "app", "../runs/exp1", "--port", str(port),
               "--server.headless", "true", "--server.fileWatcherType", "none"]
    log_path = tmp_path / "server.log"
    with serve(command, port=port, cwd=empty, env=installed_wheel.env(HOME=str(home)), log_path=log_path) as url:
        with urllib.request.urlopen(url + "/_stcore/health", timeout=10) as response:
            assert response.read().decode().strip() == "ok"
        with urllib.request.urlopen(url + "/", timeout=10) as response:
            assert response.status == 200
            assert b'id="root"' in response.read()  # Streamlit's page, served by the installed app
    log = log_path.read_text(errors="replace")
    assert f"rolloutscope: opening {run}" in log  # the relative path, made absolute
    assert f"URL: http://localhost:{port}" in log, log  # the bundled config: loopback only
    assert "Traceback" not in log
    assert list(empty.iterdir()) == []  # nothing written where it was started


def test_rolloutscope_app_refuses_a_missing_path_before_starting(installed_wheel, tmp_path):
    done = subprocess.run([str(installed_wheel.rolloutscope), "app", "no-such-run"], cwd=tmp_path,
                          env=installed_wheel.env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == "error: no-such-run: not found"
