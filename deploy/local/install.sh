#!/usr/bin/env bash
# Installs what canal-bridge needs on a Debian machine, idempotently, by purpose:
#   run   what running the bridge needs (deploy/local/quickstart.sh): MariaDB, Java and Maven
#         (the Kafka broker's jars from Maven Central, into var/cache/kafka-libs), the project's
#         virtualenv (var/venv) with the runtime dependencies, and in it the compiled hot path
#         (native/, Rust + PyO3) when cargo is on the machine;
#   test  everything (deploy/local/test.sh, the default): the above, plus a Debian sid root
#         file system with MySQL 9.x (debootstrap, into var/cache/sid-rootfs), buildah (the
#         container image), chromium (the web console's browser tests, driven by Playwright),
#         the virtualenv's spark, test and dev extras, and promtool (the alerting rules'
#         checker, built with Go into var/cache/go/bin) when Go is.
# Usage: deploy/local/install.sh [run|test]
#        deploy/local/install.sh [system|tools|kafka|mysql|python|python-run|native|promtool]...
source "$(dirname "$0")/lib.sh"

install_system() {
  local missing=()
  command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server)
  command -v mariadb >/dev/null || missing+=(mariadb-client)
  command -v java >/dev/null || missing+=(openjdk-17-jre-headless)
  command -v mvn >/dev/null || missing+=(maven)
  python3 -m venv --help >/dev/null 2>&1 || missing+=(python3-venv)
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
  local java_major
  java_major=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/ *java.specification.version = //p')
  [ "${java_major%%.*}" -ge 17 ] 2>/dev/null \
    || die "Java 17 or newer is required (found '${java_major:-none}'): apt-get install openjdk-17-jre-headless"
}

# What testing needs besides: debootstrap (the MySQL root file system), buildah (the image)
# and chromium (tests/browser; Playwright drives Debian's build, never downloads its own).
install_tools() {
  local missing=()
  command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
  command -v buildah >/dev/null || missing+=(buildah)  # the container image (deploy/docker)
  [ -x /usr/bin/chromium ] || missing+=(chromium)  # the web console's browser tests
  if [ ${#missing[@]} -gt 0 ]; then apt_install "${missing[@]}"; fi
}

install_kafka() {
  local libs=$CACHE_DIR/kafka-libs pom=$REPO_ROOT/deploy/local/kafka-pom.xml
  local stamp=$libs/.pom.sha256 sum
  sum=$(sha256sum "$pom" | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then return; fi
  log "resolving Kafka and ZooKeeper jars from Maven Central into $libs"
  rm -rf "$libs"
  mvn -q -B -Dstyle.color=never -f "$pom" -Dmaven.repo.local="$CACHE_DIR/m2" dependency:copy-dependencies \
    -DoutputDirectory="$libs" -DincludeScope=runtime >&2 \
    || die "downloading the Kafka jars from Maven Central failed: check network access, then rerun"
  echo "$sum" >"$stamp"
}

# MySQL is not in Debian stable; sid's mysql-server-core runs from a chroot (services.sh).
# The stamp names the packages, so changing the list rebuilds the root file system.
SID_PACKAGES=mysql-server-core,mysql-client-core
install_mysql() {
  local stamp=$SID_ROOTFS/.canal-bridge-packages
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$SID_PACKAGES" ]; then return; fi
  [ "$(id -u)" -eq 0 ] || die "building the MySQL root file system needs root (debootstrap, chroot): rerun as root"
  install_tools
  log "building a Debian sid root file system with MySQL into $SID_ROOTFS (debootstrap, about a minute)"
  local tmp=$SID_ROOTFS.partial
  rm -rf "$tmp" "$SID_ROOTFS"
  debootstrap --variant=minbase --include="$SID_PACKAGES" sid "$tmp" "$DEBIAN_MIRROR" \
    >"$CACHE_DIR/sid-debootstrap.log" 2>&1 \
    || die "debootstrap of Debian sid failed: see $CACHE_DIR/sid-debootstrap.log (mirror $DEBIAN_MIRROR; set CANAL_BRIDGE_DEBIAN_MIRROR to another)"
  rm -rf "$tmp"/var/cache/apt/archives/*.deb
  mkdir -p "$tmp/srv/mysql"
  echo "$SID_PACKAGES" >"$tmp/.canal-bridge-packages"
  mv "$tmp" "$SID_ROOTFS"
}

# The virtualenv with the runtime dependencies only (extras ''), or also the spark, test and
# dev extras. The stamp records which: a full virtualenv serves a run too.
install_python() {
  local extras=${1-spark,test,dev}
  local stamp=$VENV_DIR/.pyproject.sha256 sum lock=$REPO_ROOT/deploy/docker/requirements.lock
  sum=$(cat "$REPO_ROOT/pyproject.toml" "$lock" | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ]; then
    local done_sum done_extras
    read -r done_sum done_extras <"$stamp" || true
    if [ "$done_sum" = "$sum" ] && { [ "${done_extras:-}" = "$extras" ] || [ -z "$extras" ]; }; then
      return
    fi
  fi
  if [ -n "$extras" ]; then
    log "creating the virtualenv $VENV_DIR (pyspark is large: the first run takes a few minutes)"
  else
    log "creating the virtualenv $VENV_DIR (runtime dependencies)"
  fi
  [ -x "$VENV_DIR/bin/python" ] || python3 -m venv "$VENV_DIR" \
    || die "python3 -m venv failed: apt-get install python3-venv"
  PIP_CACHE_DIR=$CACHE_DIR/pip "$VENV_DIR/bin/pip" install -q --upgrade pip >&2
  # The runtime dependencies at the versions the container image pins (the lock), so the venv
  # tested here is what the image runs, whatever PyPI has published since.
  PIP_CACHE_DIR=$CACHE_DIR/pip "$VENV_DIR/bin/pip" install -q -c "$lock" -e "$REPO_ROOT${extras:+[$extras]}" >&2 \
    || die "pip install of canal-bridge failed: see the output above"
  echo "$sum ${extras}" >"$stamp"
}

install_native() {
  local stamp=$VENV_DIR/.native.sha256 sum native=$REPO_ROOT/native
  sum=$(cat "$native"/Cargo.toml "$native"/Cargo.lock "$native"/pyproject.toml "$native"/src/*.rs \
    | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then return; fi
  if ! command -v cargo >/dev/null; then
    log "cargo not found: the bridge will run its pure-Python path (same output, more CPU per row:" \
      "docs/benchmarks.md); install Rust from https://rustup.rs and rerun deploy/local/install.sh native"
    return
  fi
  log "building the compiled hot path (native/, Rust) into $VENV_DIR"
  CARGO_TARGET_DIR=$NATIVE_TARGET_DIR PIP_CACHE_DIR=$CACHE_DIR/pip \
    "$VENV_DIR/bin/pip" install -q "$native" >&2 \
    || die "building native/ failed (cargo's output above); it needs Rust >= 1.74 (rustup update)"
  echo "$sum" >"$stamp"
}

# promtool checks and tests the alerting rules (deploy/monitoring); Prometheus publishes no
# Debian package of it for bookworm's Go, so it is built from the Go module proxy.
PROMTOOL_VERSION=v0.316.0  # github.com/prometheus/prometheus's Go module version
install_promtool() {
  local gobin=$CACHE_DIR/go/bin stamp=$CACHE_DIR/go/bin/.promtool-version
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$PROMTOOL_VERSION" ] && [ -x "$gobin/promtool" ]; then return; fi
  local go=go
  command -v go >/dev/null || go=/usr/local/go/bin/go
  if ! command -v "$go" >/dev/null; then
    log "go not found: promtool is not built and the rules tests skip; apt-get install golang-go" \
      "(or Go from https://go.dev/dl) and rerun deploy/local/install.sh promtool"
    return
  fi
  log "building promtool $PROMTOOL_VERSION into $gobin (go install, a few minutes the first time)"
  GOPATH=$CACHE_DIR/go GOBIN=$gobin GOCACHE=$CACHE_DIR/go-build GOFLAGS=-modcacherw \
    nice "$go" install "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION" >&2 \
    || die "go install of promtool failed: see the output above (it needs Go >= 1.24 and the Go module proxy)"
  echo "$PROMTOOL_VERSION" >"$stamp"
  # Only the binary is needed: the module and build caches are about 4 GB.
  rm -rf "$CACHE_DIR/go-build" "$CACHE_DIR/go/pkg"
}

main() {
  mkdir -p "$CACHE_DIR"
  local parts=("$@")
  [ ${#parts[@]} -gt 0 ] || parts=(test)
  for part in "${parts[@]}"; do
    case $part in
      run) main system kafka python-run native ;;
      test) main system tools kafka mysql python native promtool ;;
      system) install_system ;;
      tools) install_tools ;;
      kafka) install_kafka ;;
      mysql) install_mysql ;;
      python) install_python ;;
      python-run) install_python "" ;;
      native) install_native ;;
      promtool) install_promtool ;;
      *) die "unknown part '$part': use run, test, or system, tools, kafka, mysql, python, python-run, native, promtool" ;;
    esac
  done
}

main "$@"
