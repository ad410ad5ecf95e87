#!/usr/bin/env bash
# The README's test command: installs what the tests need, then runs the whole suite.
#   bash scripts/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

# ray: the Ray engine's tests (tests/rollouts/test_ray_engine.py) run too
python3 -m pip install --quiet --disable-pip-version-check -e '.[test,ray]'

# The browser test drives Debian's headless Chromium (never a downloaded browser build).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing Debian's chromium for the browser test"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "chromium is missing and cannot be installed here: run 'sudo apt-get install chromium'" >&2
  fi
fi

python3 -m ruff check .

# On CI, hypothesis draws from a fixed seed so that a red run can be replayed exactly
# (HYPOTHESIS_SEED overrides it); local runs draw new examples every time.
seed_args=()
if [ -n "${CI:-}" ]; then
  seed_args=(--hypothesis-seed="${HYPOTHESIS_SEED:-20261130}")
fi

status=0
python3 -m pytest ${seed_args[@]+"${seed_args[@]}"} "$@" || status=$?
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure, not a pass" >&2
  exit 1
fi
exit "$status"
