#!/usr/bin/env bash
# The project's two commands. On a fresh machine with only Python 3.11 they do all the set-up:
#   bash run.sh demo [ARGS]    the main job (python -m dpauc_tf.demo ARGS) in the federated world
#   bash run.sh test [ARGS]    lint, then the whole test suite in both worlds (ARGS go to pytest)
# Environments (both locked in uv.lock):
#   .venv         federated: TensorFlow 2.14 (Keras 2) + TFF 0.87 + tensorflow-privacy 0.9
#   .venv-keras3  keras3:    the newest TensorFlow (Keras 3), no TFF
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

sync_env() {  # sync_env DIR EXTRA
  echo "[run.sh] syncing $1 (extra: $2)" >&2
  UV_PROJECT_ENVIRONMENT="$1" uv_cmd sync --frozen --quiet --extra "$2" --python 3.11
}

run_pytest() {  # run_pytest ENV_DIR LOG ARGS...: output goes to a file first (TFF's worker holds pipes)
  local env_dir=$1 log=$2; shift 2
  set +e
  "$env_dir/bin/python" -m pytest "$@" >"$log" 2>&1
  local rc=$?
  set -e
  cat "$log"
  if [ "$rc" -eq 5 ]; then
    echo "[run.sh] pytest collected no tests in $env_dir" >&2
    rc=0
  fi
  return "$rc"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  setup)
    sync_env .venv federated
    sync_env .venv-keras3 keras3
    ;;
  demo)
    sync_env .venv federated
    exec .venv/bin/python -m dpauc_tf.demo "$@"
    ;;
  test)
    sync_env .venv federated
    sync_env .venv-keras3 keras3
    mkdir -p test-logs
    .venv/bin/ruff check . && .venv/bin/ruff format --check .
    status=0
    echo "=== federated world: TensorFlow 2.14 / Keras 2 / TFF 0.87 ==="
    run_pytest .venv test-logs/pytest-federated.log "$@" || status=1
    echo "=== keras3 world: newest TensorFlow / Keras 3 ==="
    run_pytest .venv-keras3 test-logs/pytest-keras3.log "$@" || status=1
    exit "$status"
    ;;
  *)
    echo "usage: bash run.sh {demo|test|setup} [ARGS]" >&2
    exit 2
    ;;
esac
