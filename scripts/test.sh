#!/usr/bin/env bash
# The README's test command: installs what the tests need, then runs the whole suite.
#   bash scripts/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

# The browser test drives Debian's headless Chromium (never a downloaded browser build); ccache
# lets the wheel test's build reuse the compile the install below does (and a later run reuse
# both): each is about a minute of C on two cores.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v ccache >/dev/null 2>&1 || missing+=(ccache)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's ${missing[*]} for the suite"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "${missing[*]} missing and cannot be installed here: run 'sudo apt-get install ${missing[*]}'" >&2
  fi
fi
if command -v ccache >/dev/null 2>&1; then
  export CC="ccache ${CC:-gcc}"
fi

# ray: the Ray engine's tests (tests/engines/test_ray_engine.py) run too
python3 -m pip install --quiet --disable-pip-version-check -e '.[test,ray]'

python3 -m ruff check .

# On CI, hypothesis draws from a fixed seed so that a red run can be replayed exactly
# (HYPOTHESIS_SEED overrides it); local runs draw new examples every time.
seed_args=()
if [ -n "${CI:-}" ]; then
  seed_args=(--hypothesis-seed="${HYPOTHESIS_SEED:-20261130}")
fi

# Both pytest runs below need the wheel built and installed as a user would (tests/installed_wheel.py):
# the first builds it into this folder and the browser run installs the same one.
built_wheels=$(mktemp -d "${TMPDIR:-/tmp}/rolloutscope-test-wheels.XXXXXX")
trap 'rm -rf "$built_wheels"' EXIT
export ROLLOUTSCOPE_TEST_WHEELS="$built_wheels"

# Every test but the browser tests: one test process per core (at most four), a test file's tests
# together on one process, so a module's live server or built wheel is made once per file.
others=0
python3 -m pytest -n auto --maxprocesses 4 --dist loadfile -m "not browser" \
  ${seed_args[@]+"${seed_args[@]}"} "$@" || others=$?
# Then the browser tests, one at a time: a page's waits assume the machine is not also running
# other tests (two busy test processes on two cores pushed a page past its 60 s wait).
browser=0
python3 -m pytest -m browser ${seed_args[@]+"${seed_args[@]}"} "$@" || browser=$?

if [ "$others" -eq 5 ] && [ "$browser" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure, not a pass" >&2
  exit 1
fi
[ "$others" -eq 5 ] && others=0  # a selection with only browser tests, or none
[ "$browser" -eq 5 ] && browser=0
if [ "$others" -ne 0 ]; then
  exit "$others"
fi
exit "$browser"
