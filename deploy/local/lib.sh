# Shared settings and helpers for the local scripts; sourced, never run.
# Everything the scripts create lives under $VAR_DIR (git-ignored): services, caches, virtualenv.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VAR_DIR=${CANAL_BRIDGE_VAR_DIR:-$REPO_ROOT/var}
SERVICES_DIR=$VAR_DIR/services
CACHE_DIR=$VAR_DIR/cache
# Downloads and builds (jars, the sid root, promtool, wheels, the image's base) are kept in a
# folder outside the clone, which var/cache links to when it is first made: another clone on
# the same machine (CI's fresh one) finds them there. A speed-up only: an empty or missing one
# is filled as before, and var/cache as a plain folder (an older clone) is used as it is.
SHARED_CACHE_DIR=${CANAL_BRIDGE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/canal-bridge}
if [ ! -e "$CACHE_DIR" ] && [ ! -L "$CACHE_DIR" ] && mkdir -p "$SHARED_CACHE_DIR" "$VAR_DIR" 2>/dev/null; then
  ln -s "$SHARED_CACHE_DIR" "$CACHE_DIR"
elif [ -L "$CACHE_DIR" ] && [ ! -e "$CACHE_DIR" ]; then
  mkdir -p "$(readlink "$CACHE_DIR")"  # the shared folder was removed: start it afresh
fi
VENV_DIR=$VAR_DIR/venv
NATIVE_TARGET_DIR=$CACHE_DIR/native-target  # cargo's build folder for native/
# A Debian sid root file system (debootstrap) that MySQL runs from, chrooted: nothing from sid
# touches the host. Built once, reused by every later `services.sh up mysql`.
SID_ROOTFS=$CACHE_DIR/sid-rootfs
DEBIAN_MIRROR=${CANAL_BRIDGE_DEBIAN_MIRROR:-http://deb.debian.org/debian}

# rustup installs cargo under ~/.cargo/bin, which non-login shells may not have on PATH.
if ! command -v cargo >/dev/null && [ -x "$HOME/.cargo/bin/cargo" ]; then
  PATH=$HOME/.cargo/bin:$PATH
fi

# Non-default ports, so a system MariaDB/Kafka/ZooKeeper on the machine never clashes.
MYSQL_PORT=${CANAL_BRIDGE_MYSQL_PORT:-13306}                    # MariaDB (the historical name)
ORACLE_MYSQL_PORT=${CANAL_BRIDGE_ORACLE_MYSQL_PORT:-13307}      # MySQL 9.x from Debian sid
KAFKA_PORT=${CANAL_BRIDGE_KAFKA_PORT:-19092}
KAFKA_CONTROLLER_PORT=${CANAL_BRIDGE_KAFKA_CONTROLLER_PORT:-19093}
KAFKA_SASL_PORT=${CANAL_BRIDGE_KAFKA_SASL_PORT:-19094}         # SASL_SSL + SCRAM-SHA-512
ZOOKEEPER_PORT=${CANAL_BRIDGE_ZOOKEEPER_PORT:-12181}

MYSQL_CANAL_USER=canal
MYSQL_CANAL_PASSWORD=canal
MYSQL_ADMIN_USER=bridge_admin
MYSQL_ADMIN_PASSWORD=bridge_admin
# The TLS side: a MariaDB account created REQUIRE SSL (the canal account's privileges) and a
# Kafka SCRAM-SHA-512 user for the SASL_SSL listener; both servers present a certificate for
# 127.0.0.1/localhost signed by a local CA (TLS_DIR/ca.crt), which the clients verify.
TLS_DIR=$SERVICES_DIR/tls
MYSQL_TLS_USER=canal_tls
MYSQL_TLS_PASSWORD=canal_tls_pw
KAFKA_SASL_USER=canal
KAFKA_SASL_PASSWORD=canal_scram_pw

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=0
apt_install() {
  if [ "$apt_updated" -eq 0 ]; then
    as_root apt-get update -qq || die "apt-get update failed: check the machine's access to Debian's package mirror"
    apt_updated=1
  fi
  log "installing Debian packages: $*"
  # policy-rc.d keeps the packages' own system services from starting (we run our own).
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -q --no-install-recommends "$@" >&2 \
    || die "apt-get install $* failed: see the output above"
}

# True when something listens on 127.0.0.1:$1.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_until SECONDS DESCRIPTION COMMAND...: poll COMMAND until it succeeds, or fail.
wait_until() {
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@"; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
  log "$what"
}

# pid_alive PIDFILE: the process recorded in PIDFILE still runs.
pid_alive() {
  local pid
  [ -f "$1" ] || return 1
  pid=$(cat "$1")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# The container image (deploy/docker/build.sh): buildah's storage (vfs driver, no daemon, no
# registry) under the cache, so builds and the image smoke test share it. Run buildah through
# `image_buildah` to see the same images.
IMAGE_STORAGE=$CACHE_DIR/containers
image_buildah() {
  buildah --root "$IMAGE_STORAGE/storage" --runroot "$IMAGE_STORAGE/run" --storage-driver vfs "$@"
}
