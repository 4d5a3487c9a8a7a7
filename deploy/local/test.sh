#!/usr/bin/env bash
# Installs everything, starts the local services, then runs lint, types and the whole test suite.
# Services this script started are stopped again at the end (set CANAL_BRIDGE_KEEP_SERVICES=1
# to keep them for the next run). Extra arguments go to pytest, e.g. `test.sh tests/unit -x`.
source "$(dirname "$0")/lib.sh"
cd "$REPO_ROOT"

started=()
stop_started() {
  if [ "${CANAL_BRIDGE_KEEP_SERVICES:-0}" != 1 ] && [ ${#started[@]} -gt 0 ]; then
    deploy/local/services.sh down "${started[@]}" || true
  fi
}
trap stop_started EXIT

deploy/local/install.sh
for s in mariadb mysql zookeeper kafka; do
  deploy/local/services.sh status "$s" | grep -q running || started+=("$s")
done
deploy/local/services.sh up
eval "$(deploy/local/services.sh env)"
# `up` gave MariaDB and Kafka their TLS side: the TLS/SASL tests must run, not skip.
export CANAL_BRIDGE_REQUIRE_TLS=1

py=$VENV_DIR/bin
log "lint: ruff"
"$py/ruff" check .
"$py/ruff" format --check .
log "lint: import contracts (pyproject.toml [tool.importlinter])"
"$py/lint-imports"
log "lint: commit messages"
"$py/python" deploy/local/check_commits.py
log "types: mypy (strict on bridge/ and spark_jobs/)"
"$py/mypy"
if [ -f "$VENV_DIR/.native.sha256" ]; then
  # Built: the compiled-vs-Python twin tests must run, not skip.
  export CANAL_BRIDGE_REQUIRE_NATIVE=1
  log "native/: cargo fmt, clippy, test"
  (
    cd native
    export CARGO_TARGET_DIR=$NATIVE_TARGET_DIR PYO3_PYTHON=$py/python
    cargo fmt --check
    cargo clippy --release --all-targets -q -- -D warnings
    cargo test --release -q
  )
fi
if [ -f "$VENV_DIR/.native.sha256" ]; then
  # The container image carries the compiled hot path: built, its smoke test (tests/image)
  # must run, not skip. A repeat build reuses the cached base and wheelhouse.
  log "image: deploy/docker/build.sh"
  deploy/docker/build.sh
  export CANAL_BRIDGE_REQUIRE_IMAGE=1
fi
if [ -x "$CACHE_DIR/go/bin/promtool" ]; then
  export CANAL_BRIDGE_REQUIRE_PROMTOOL=1  # the alerting rules' promtool check and tests
fi
# install.sh put chromium here and Playwright in the virtualenv: the web console's browser
# tests (tests/browser) must run, not skip.
export CANAL_BRIDGE_REQUIRE_BROWSER=1
# install.sh put Java 17 and Maven here: the real consumers (tests/interop: canal's client,
# Flink's canal-json) are built from Maven Central into var/cache and must run, not skip.
export CANAL_BRIDGE_REQUIRE_JAVA_INTEROP=1
log "tests: pytest"
"$py/python" -m pytest -q -p no:cacheprovider "$@"
