#!/usr/bin/env bash
# The project's two commands. On a fresh machine with only Python 3.11 they do all the set-up:
#   bash run.sh demo [ARGS]    the main job (python -m models.demo ARGS) in the federated world
#   bash run.sh test [ARGS]    lint, the docs site, then the whole test suite in both worlds and
#                              on Python 3.13 what differs there (CHUNKS below); with ARGS,
#                              pytest ARGS once in each of the three environments
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

# Where the tests run (`bash run.sh test` without ARGS). Every world runs the whole suite, except:
# - WORLD_INDEPENDENT_TESTS: pure Python and NumPy (no TensorFlow, Keras or JAX), so the same in
#   every world: they run once, on Python 3.13 (the newest Python and NumPy), with
#   tests/helpers/tensorflow_blocked.py, which fails a test here that comes to import one of them
#   (it then belongs to every world: take it off the list).
# - Python 3.13 has the keras3 world's TensorFlow and Keras: it runs what differs there, the JAX
#   backend (the Keras tests named jax, and the docs' blocks that set it), the install checks
#   (tests/packaging), the docstring examples, the command line's help and formats (argparse
#   changed in 3.13) and the world-independent tests; the other TensorFlow tests run in the
#   keras3 world on Python 3.11.
WORLD_INDEPENDENT_TESTS=(tests/test_layers.py tests/test_import_cycles.py tests/test_world_split.py
  tests/core/test_partitions.py tests/core/test_sampling_variance.py tests/hostile/test_reader_fuzz.py
  tests/models/test_fitting.py tests/data_prep/test_preprocess.py tests/data_prep/test_reader.py
  tests/data_prep/test_synthetic.py)
PY313_TESTS=(tests/docs/test_code_blocks.py tests/packaging tests/test_docstrings.py
  tests/cli/test_cli_usability.py)  # and tests/keras -k jax: the chunk py313-jax
# Each world's suite is cut into chunks (its "rest" leaves out the directories that its other
# chunks run; tests/test_world_split.py checks it); the two lanes, one per core, take the chunks
# in this order, each the next one that is free, so that neither lane waits long for the other
# (the longest first; Flower's Ray and Spark's JVM apart).
CHUNKS=(
  "keras3-rest|.venv-keras3|tests --ignore=tests/keras --ignore=tests/cli --ignore=tests/flower --ignore=tests/beam --ignore=tests/spark --ignore=tests/docs/test_code_blocks.py"
  "federated-rest|.venv|tests --ignore=tests/keras --ignore=tests/federated --ignore=tests/cli"
  "keras3-flower|.venv-keras3|tests/flower"
  "federated-keras|.venv|tests/keras"
  "keras3-keras|.venv-keras3|tests/keras"
  "federated-tff-cli|.venv|tests/federated tests/cli"
  "keras3-cli|.venv-keras3|tests/cli"
  "keras3-beam-spark|.venv-keras3|tests/beam tests/spark"
  "keras3-docs-blocks|.venv-keras3|tests/docs/test_code_blocks.py"
  "py313|.venv-py313|${PY313_TESTS[*]}"
  "py313-jax|.venv-py313|tests/keras -k jax"
  "py313-world-independent|.venv-py313|-p tests.helpers.tensorflow_blocked ${WORLD_INDEPENDENT_TESTS[*]}"
)

run_chunks() {  # run_chunks: one lane; runs each chunk of CHUNKS that no other lane has claimed
  local lane_status=0 index name env_dir args ignore
  for index in "${!CHUNKS[@]}"; do
    mkdir test-logs/claim-"$index" 2>/dev/null || continue  # the other lane has it
    IFS='|' read -r name env_dir args <<<"${CHUNKS[$index]}"
    ignore=()
    if [ "$name" != py313-world-independent ]; then
      for path in "${WORLD_INDEPENDENT_TESTS[@]}"; do ignore+=(--ignore="$path"); done
    fi
    echo "[run.sh] $(date -u +%H:%M:%S) lane $1 starts $name" >&2
    # shellcheck disable=SC2086  # args: paths and options, split on spaces
    run_pytest "$env_dir" test-logs/pytest-"$name".log $args "${ignore[@]}" || lane_status=1
    echo "[run.sh] $(date -u +%H:%M:%S) lane $1 ends $name" >&2
  done
  return "$lane_status"
}

install_chromium() {  # the headless browser of tests/cli/test_report.py: Debian's chromium
  # package (a registry package; playwright's `install chromium` downloads a browser build from
  # outside the registries and fails on the project's machines). As root where apt-get exists;
  # elsewhere the browser tests skip, except under CI=true, where they fail without a browser.
  command -v chromium >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "[run.sh] installing chromium (tests/cli/test_report.py)" >&2
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } ||
      echo "[run.sh] chromium could not be installed: the browser tests skip (fail under CI)" >&2
  else
    echo "[run.sh] no chromium (needs root and apt-get): the browser tests skip" >&2
  fi
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  setup)
    sync_env .venv federated 3.11
    sync_env .venv-keras3 keras3 3.11 "${KERAS3_EXTRAS[@]}" --group docs
    sync_env .venv-py313 keras3 3.13 --extra jax
    install_chromium
    ;;
  demo)
    sync_env .venv federated 3.11
    exec .venv/bin/python -m models.demo "$@"
    ;;
  test)
    sync_env .venv federated 3.11
    sync_env .venv-keras3 keras3 3.11 "${KERAS3_EXTRAS[@]}" --group docs
    sync_env .venv-py313 keras3 3.13 --extra jax
    install_chromium
    mkdir -p test-logs && rm -rf test-logs/pytest-*.log test-logs/claim-*
    .venv/bin/ruff check . && .venv/bin/ruff format --check .
    echo "=== API reference site (mkdocs, warnings are errors) ==="
    .venv-keras3/bin/mkdocs build --strict --site-dir site  # never quiet: it hides the warnings
    status=0
    if [ $# -eq 0 ]; then  # two lanes sharing the chunks (see CHUNKS above)
      run_chunks 1 &
      lane1=$!
      run_chunks 2 &
      lane2=$!
      wait "$lane1" || status=1
      wait "$lane2" || status=1
      for chunk in "${CHUNKS[@]}"; do
        name=${chunk%%|*}
        show_log "$name" test-logs/pytest-"$name".log
      done
    else  # each world runs ARGS once: the federated world on one lane, the others on the other
      run_pytest .venv test-logs/pytest-federated.log "$@" &
      lane1=$!
      (
        lane_status=0
        run_pytest .venv-keras3 test-logs/pytest-keras3.log "$@" || lane_status=1
        run_pytest .venv-py313 test-logs/pytest-py313.log "$@" || lane_status=1
        exit "$lane_status"
      ) &
      lane2=$!
      wait "$lane1" || status=1
      wait "$lane2" || status=1
      show_log "federated world: TensorFlow 2.14 / Keras 2 / TFF 0.87" test-logs/pytest-federated.log
      show_log "keras3 world: newest TensorFlow / Keras 3, Beam, TFMA, Flower" \
        test-logs/pytest-keras3.log
      show_log "keras3 world on Python 3.13 (with JAX)" test-logs/pytest-py313.log
    fi
    rm -rf test-logs/claim-*
    exit "$status"
    ;;
  *)
    echo "usage: bash run.sh {demo|test|setup} [ARGS]" >&2
    exit 2
    ;;
esac
