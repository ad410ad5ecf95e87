"""``rolloutscope app``: where the app's files are, what is checked before the server starts, and the
command it runs. (The installed wheel serving the app for real: tests/test_wheel.py.)"""

from __future__ import annotations

import ipaddress
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring import cli, launch
from scoring.launch import LaunchError, app_root, is_loopback, plan_app, split_streamlit_options
from scoring.rollouts.access import ROOTS_ENV

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_roots(monkeypatch):
    for name in (ROOTS_ENV, "STREAMLIT_SERVER_ADDRESS"):
        monkeypatch.delenv(name, raising=False)


def app_folder(tmp_path: Path, address: str = "localhost") -> Path:
    """A folder laid out as the app's: app.py, pages/, the Streamlit config."""
    root = tmp_path / "app"
    (root / "pages").mkdir(parents=True)
    (root / "app.py").write_text("")
    (root / ".streamlit").mkdir()
    (root / ".streamlit" / "config.toml").write_text(f'[server]\naddress = "{address}"\n')
    return root


# --------------------------------------------------------------------------- the app's files


def test_a_checkout_runs_its_own_files():
    assert app_root() == REPO
    assert app_root(REPO / "dashboard") == REPO


def test_an_installed_package_runs_its_bundle(tmp_path):
    package = tmp_path / "site-packages" / "dashboard"
    (package / launch.APP_BUNDLE / "pages").mkdir(parents=True)
    (tmp_path / "site-packages" / "app.py").write_text("")  # another distribution's app.py, no pages/ beside it
    assert app_root(package) == package / launch.APP_BUNDLE


def test_missing_app_files_are_a_clear_error(tmp_path):
    with pytest.raises(LaunchError, match=r"the app's files are missing .*app\.py not found.*reinstall"):
        plan_app(root=tmp_path / "nothing")


# --------------------------------------------------------------------------- Streamlit's options


def test_streamlit_options_pass_through_in_either_form():
    own, streamlit = split_streamlit_options(
        ["--server.maxUploadSize", "200", "runs/", "--theme.base=dark", "--port", "8600", "--", "--odd.name"])
    assert own == ["runs/", "--port", "8600", "--", "--odd.name"]  # after --, a path
    assert streamlit == ["--server.maxUploadSize", "200", "--theme.base=dark"]


@pytest.mark.parametrize(("args", "message"), [
    (["--server.port", "1"], "use --port instead of --server.port"),
    (["--server.address=0.0.0.0"], "use --host instead of --server.address"),
    (["runs", "--server.headless"], "--server.headless needs a value"),
])
def test_options_of_its_own_or_without_a_value_are_refused(args, message):
    with pytest.raises(LaunchError, match=message):
        split_streamlit_options(args)


_names = st.from_regex(r"[a-z][A-Za-z0-9]{0,6}\.[a-z][A-Za-z0-9]{0,8}", fullmatch=True).filter(
    lambda name: name not in launch.OWN_STREAMLIT_OPTIONS)
_plain = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12).filter(lambda t: not t.startswith("-"))


@given(st.lists(st.one_of(
    st.tuples(st.just("own"), _plain),
    st.tuples(st.just("joined"), st.tuples(_names, _plain)),
    st.tuples(st.just("separate"), st.tuples(_names, st.text(max_size=12))),
), max_size=8))
def test_the_split_keeps_both_lists_in_order(items):
    args, own, streamlit = [], [], []
    for kind, value in items:
        if kind == "own":
            args.append(value)
            own.append(value)
        elif kind == "joined":
            option = f"--{value[0]}={value[1]}"
            args.append(option)
            streamlit.append(option)
        else:  # a value may look like anything, even an option: it belongs to the option before it
            args += [f"--{value[0]}", value[1]]
            streamlit += [f"--{value[0]}", value[1]]
    assert split_streamlit_options(args) == (own, streamlit)


# --------------------------------------------------------------------------- loopback


@pytest.mark.parametrize(("address", "loopback"), [
    ("localhost", True), ("LOCALHOST", True), ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True),
    ("[::1]", True), ("0.0.0.0", False), ("", False), (None, False), ("gpu-box.example.org", False), ("::", False),
])
def test_loopback_addresses(address, loopback):
    assert is_loopback(address) is loopback


@given(st.ip_addresses())
def test_an_ip_address_is_loopback_exactly_when_python_says_so(address):
    assert is_loopback(str(address)) is ipaddress.ip_address(address).is_loopback


# --------------------------------------------------------------------------- the plan


def test_paths_are_made_absolute_and_follow_streamlits_options(tmp_path):
    root = app_folder(tmp_path)
    (tmp_path / "runs" / "exp1").mkdir(parents=True)
    plan = plan_app(["runs/exp1", "runs/*/*.jsonl"], port=8600, streamlit_options=["--server.headless", "true"],
                    cwd=str(tmp_path), root=root)
    paths = (str(tmp_path / "runs" / "exp1"), str(tmp_path / "runs" / "*" / "*.jsonl"))
    assert plan.paths == paths
    assert plan.argv == (sys.executable, "-m", "streamlit", "run", str(root / "app.py"), "--server.port", "8600",
                         "--server.headless", "true", "--", *paths)
    assert plan.address == "localhost"  # the app's own config: loopback
    assert ROOTS_ENV not in plan.env


def test_without_a_path_the_app_opens_the_sample(tmp_path):
    root = app_folder(tmp_path)
    plan = plan_app(cwd=str(tmp_path), root=root)
    assert plan.argv == (sys.executable, "-m", "streamlit", "run", str(root / "app.py"))
    assert "the bundled sample data" in plan.describe()


def test_a_missing_path_is_named(tmp_path):
    with pytest.raises(LaunchError, match=r"^runs/none: not found$"):
        plan_app(["runs/none"], cwd=str(tmp_path), root=app_folder(tmp_path))


def test_data_roots_are_set_for_the_server_and_checked_here(tmp_path):
    root = app_folder(tmp_path)
    for folder in ("data/a", "data/b", "elsewhere"):
        (tmp_path / folder).mkdir(parents=True)
    plan = plan_app(["data/a"], data_roots=["data/a", "data/b"], cwd=str(tmp_path), root=root)
    assert plan.env[ROOTS_ENV] == os.pathsep.join([str(tmp_path / "data" / "a"), str(tmp_path / "data" / "b")])
    with pytest.raises(LaunchError, match=r"^elsewhere: outside the data roots \(allowed: .*data/a, .*data/b\)$"):
        plan_app(["elsewhere"], data_roots=["data/a", "data/b"], cwd=str(tmp_path), root=root)
    with pytest.raises(LaunchError, match=r"^/etc/\*\.conf: outside the data roots"):  # a glob: its folder
        plan_app(["/etc/*.conf"], data_roots=["data/a"], cwd=str(tmp_path), root=root)
    with pytest.raises(LaunchError, match=r"^--data-root data/c: not a folder$"):
        plan_app([], data_roots=["data/c"], cwd=str(tmp_path), root=root)


def test_the_environments_data_roots_are_honoured(tmp_path, monkeypatch):
    root = app_folder(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.setenv(ROOTS_ENV, str(tmp_path / "data"))
    assert plan_app(["data"], cwd=str(tmp_path), root=root).env[ROOTS_ENV] == str(tmp_path / "data")
    with pytest.raises(LaunchError, match="outside the data roots"):
        plan_app(["elsewhere"], cwd=str(tmp_path), root=root)


def test_beyond_loopback_a_path_needs_data_roots(tmp_path):
    root = app_folder(tmp_path)
    (tmp_path / "runs").mkdir()
    with pytest.raises(LaunchError, match=r"beyond this machine \(0\.0\.0\.0\) with no data roots.*--data-root"):
        plan_app(["runs"], host="0.0.0.0", cwd=str(tmp_path), root=root)
    plan = plan_app(["runs"], host="0.0.0.0", data_roots=["runs"], cwd=str(tmp_path), root=root)
    assert plan.argv[5:7] == ("--server.address", "0.0.0.0")
    assert "listens beyond this machine" in plan.describe()
    uploads_only = plan_app([], host="0.0.0.0", cwd=str(tmp_path), root=root)  # uploads only, as the app says
    assert uploads_only.paths == ()
    with pytest.raises(LaunchError, match=r"every interface"):  # the app's config may open it too
        plan_app(["runs"], cwd=str(tmp_path), root=app_folder(tmp_path / "open", address=""))


# --------------------------------------------------------------------------- the command line


def run_cli(capsys, *argv) -> tuple[int, str]:
    code = cli.main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_the_command_line_hands_the_plan_to_the_launcher(tmp_path, monkeypatch, capsys):
    started = []
    monkeypatch.setattr(launch, "run_app", lambda plan: started.append(plan) or 0)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    code, _ = run_cli(capsys, "app", "--server.maxUploadSize", "200", "runs", "--host", "127.0.0.1", "--port", "8600")
    assert code == 0
    (plan,) = started
    assert plan.paths == (str(tmp_path / "runs"),)  # "200" is the option's value, not a path
    assert plan.argv[4:] == (str(app_root() / "app.py"), "--server.address", "127.0.0.1", "--server.port", "8600",
                             "--server.maxUploadSize", "200", "--", str(tmp_path / "runs"))


@pytest.mark.parametrize(("argv", "message"), [
    (["app", "nowhere"], "error: nowhere: not found"),
    (["app", "--port", "0"], "a port is between 1 and 65535, not 0"),
    (["app", "--port", "http"], "not a port number: 'http'"),
    (["app", "--server.port", "8600"], "error: use --port instead of --server.port"),
    (["app", "--server.headless"], "error: the Streamlit option --server.headless needs a value"),
])
def test_command_line_mistakes_exit_2_before_any_server(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(launch, "run_app", lambda plan: pytest.fail("no server may start"))
    monkeypatch.chdir(tmp_path)
    code, err = run_cli(capsys, *argv)
    assert code == 2
    assert message in err
