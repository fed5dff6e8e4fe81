#!/usr/bin/env bash
# The project's two commands. On a fresh machine with only Python 3.11 they do all the set-up:
#   bash run.sh demo [ARGS]    the main job (python -m models.demo ARGS) in the federated world
#   bash run.sh test [ARGS]    lint, the docs site, then the whole test suite in both worlds
#                              and the keras3 world on Python 3.13 (ARGS go to pytest)
# Environments (all locked in uv.lock):
#   .venv         federated: TensorFlow 2.14 (Keras 2) + TFF 0.87 + tensorflow-privacy 0.9
#   .venv-keras3  keras3:    the newest TensorFlow (Keras 3), no TFF; Beam, TFMA, Flower; docs tools
#   .venv-py313   keras3 on Python 3.13 (the newest Python the library supports) with JAX
set -euo pipefail
cd "$(dirname "$0")"
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"

uv_cmd() {
  if command -v uv >/dev/null 2>&1; then
    uv "$@"
  else
    if ! python3 -m uv --version >/dev/null 2>&1; then
      echo "[run.sh] installing uv with pip" >&2
      python3 -m pip install --quiet --disable-pip-version-check uv >&2
    fi
    python3 -m uv "$@"
  fi
}

python_for() {  # python_for 3.13: an installed interpreter of that version (pyenv or PATH)
  local candidate
  for candidate in "$HOME"/.pyenv/versions/"$1".*/bin/python"$1" "$(command -v python"$1" || true)"; do
    if [ -x "$candidate" ] && "$candidate" -c "import sys" >/dev/null 2>&1; then
      echo "$candidate"
      return 0
    fi
  done
  echo "$1"  # let uv find (or fetch) it
}

sync_env() {  # sync_env DIR EXTRA PYTHON [uv sync options]
  local dir=$1 extra=$2 python=$3
  shift 3
  echo "[run.sh] syncing $dir (extra: $extra, Python $python)" >&2
  # --compile-bytecode: where PYTHONDONTWRITEBYTECODE is set (as on this project's machines),
  # every TensorFlow import would otherwise compile its sources again (about 5x slower).
  UV_PROJECT_ENVIRONMENT="$dir" uv_cmd sync --frozen --quiet --compile-bytecode \
    --extra "$extra" --python "$(python_for "$python")" "$@"
}

run_pytest() {  # run_pytest ENV_DIR LOG ARGS...: pytest's output goes only to LOG (TFF's worker
  local env_dir=$1 log=$2; shift 2  # holds pipes); "no tests collected" (5) counts as success
  set +e
  "$env_dir/bin/python" -m pytest -p no:cacheprovider --durations=15 "$@" >"$log" 2>&1
  local rc=$?
  set -e
  if [ "$rc" -eq 5 ]; then
    echo "[run.sh] pytest collected no tests in $env_dir" >>"$log"
    rc=0
  fi
  return "$rc"
}

show_log() {  # show_log TITLE LOG
  echo "=== $1 ==="
  cat "$2"
}

# The keras3 world also carries the integrations (Apache Beam, TFMA, Flower); the JAX backend of
# Keras 3 is tested on Python 3.13 (see the overrides in pyproject.toml).
KERAS3_EXTRAS=(--extra beam --extra tfma --extra flower --extra spark)

# On Python 3.13 the library's layers and adapters are tested (the notebooks, the demo, the
# paper's tables and the data preparation run on 3.11 above), in two halves of about equal
# time: the Keras half after the federated world, the rest after the keras3 world.
PY313_KERAS_TESTS=(tests/keras)
PY313_OTHER_TESTS=(tests/docs/test_code_blocks.py tests/core tests/noise tests/privacy tests/mechanisms tests/cli
  tests/hostile tests/packaging tests/test_docstrings.py)

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  setup)
    sync_env .venv federated 3.11
    sync_env .venv-keras3 keras3 3.11 "${KERAS3_EXTRAS[@]}" --group docs
    sync_env .venv-py313 keras3 3.13 --extra jax
    # a headless browser for the `dpauc report` page's test (it skips without one)
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && ! command -v chromium >/dev/null 2>&1; then
      echo "[run.sh] installing chromium (tests/cli/test_report.py)" >&2
      { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } ||
        echo "[run.sh] chromium could not be installed: the browser test will skip" >&2
    fi
    ;;
  demo)
    sync_env .venv federated 3.11
    exec .venv/bin/python -m models.demo "$@"
    ;;
  test)
    sync_env .venv federated 3.11
    sync_env .venv-keras3 keras3 3.11 "${KERAS3_EXTRAS[@]}" --group docs
    sync_env .venv-py313 keras3 3.13 --extra jax
    mkdir -p test-logs && rm -f test-logs/pytest-*.log
    .venv/bin/ruff check . && .venv/bin/ruff format --check .
    echo "=== API reference site (mkdocs, warnings are errors) ==="
    .venv-keras3/bin/mkdocs build --strict --site-dir site  # never quiet: it hides the warnings
    status=0
    # Two lanes, one per core: the federated world, then both halves of Python 3.13 (about
    # 12.5 + 5 + 5 minutes); the keras3 world (about 20.5). With ARGS, each world runs ARGS once.
    (
      lane_status=0
      run_pytest .venv test-logs/pytest-federated.log "$@" || lane_status=1
      if [ $# -eq 0 ]; then
        run_pytest .venv-py313 test-logs/pytest-py313-keras.log "${PY313_KERAS_TESTS[@]}" ||
          lane_status=1
        run_pytest .venv-py313 test-logs/pytest-py313.log "${PY313_OTHER_TESTS[@]}" ||
          lane_status=1
      fi
      exit "$lane_status"
    ) &
    federated_lane=$!
    (
      lane_status=0
      run_pytest .venv-keras3 test-logs/pytest-keras3.log "$@" || lane_status=1
      if [ $# -gt 0 ]; then
        run_pytest .venv-py313 test-logs/pytest-py313.log "$@" || lane_status=1
      fi
      exit "$lane_status"
    ) &
    keras3_lane=$!
    wait "$federated_lane" || status=1
    wait "$keras3_lane" || status=1
    show_log "federated world: TensorFlow 2.14 / Keras 2 / TFF 0.87" test-logs/pytest-federated.log
    show_log "keras3 world: newest TensorFlow / Keras 3, Beam, TFMA, Flower" test-logs/pytest-keras3.log
    if [ -f test-logs/pytest-py313-keras.log ]; then
      show_log "keras3 world on Python 3.13 (with JAX): the Keras metric" \
        test-logs/pytest-py313-keras.log
    fi
    show_log "keras3 world on Python 3.13 (with JAX): the library's other layers" \
      test-logs/pytest-py313.log
    exit "$status"
    ;;
  *)
    echo "usage: bash run.sh {demo|test|setup} [ARGS]" >&2
    exit 2
    ;;
esac
