#!/usr/bin/env bash
# Builds the canal-bridge container image without a Docker engine and without a registry:
#   1. a Debian bookworm base with python3 made by debootstrap (cached in var/cache/image),
#   2. a wheelhouse on the host: native/'s abi3 wheel (the venv's maturin step, cargo's cache
#      reused) and the locked dependencies, so the build itself reaches no index,
#   3. deploy/docker/Dockerfile built by buildah (vfs storage, chroot isolation) on that base,
#   4. an OCI archive of the image under var/image that docker/podman load and ctr import read.
# Usage (root): deploy/docker/build.sh
# The image stays in buildah's storage under var/cache/containers, tagged
# localhost/canal-bridge:<version>; see it with
#   buildah --root var/cache/containers/storage --runroot var/cache/containers/run \
#     --storage-driver vfs images
# Environment: CANAL_BRIDGE_DEBIAN_MIRROR (the Debian mirror), CANAL_BRIDGE_IMAGE_SOURCE (the
# org.opencontainers.image.source annotation; default: git's remote.origin.url).
# shellcheck source=deploy/local/lib.sh
source "$(dirname "$0")/../local/lib.sh"
cd "$REPO_ROOT" || exit 1

BASE_DIR=$CACHE_DIR/image
BASE_ROOTFS=$BASE_DIR/base-rootfs
# What the base holds; changing it rebuilds the root file system and the base image.
BASE_SUITE=bookworm
BASE_PACKAGES=python3,python3-venv,ca-certificates
BASE_STAMP="$BASE_SUITE:$BASE_PACKAGES:v1"
BASE_IMAGE=localhost/canal-bridge-base:$BASE_SUITE
WHEELS=$BASE_DIR/wheels
IMAGE_OUT=$VAR_DIR/image

preflight() {
  command -v buildah >/dev/null || die "buildah is not installed: apt-get install buildah"
  [ "$(id -u)" -eq 0 ] || die "building the image needs root (debootstrap, buildah's chroot isolation): rerun as root"
  command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] \
    || die "debootstrap is not installed: apt-get install debootstrap"
  command -v cargo >/dev/null \
    || die "cargo not found: the image carries the compiled hot path; install Rust from https://rustup.rs"
  [ -x "$VENV_DIR/bin/pip" ] || die "no virtualenv in $VENV_DIR: run deploy/local/install.sh python"
}

# Step 1: the base root file system, then the base image imported from it.
build_base_rootfs() {
  if [ -f "$BASE_ROOTFS/.canal-bridge-base" ] && [ "$(cat "$BASE_ROOTFS/.canal-bridge-base")" = "$BASE_STAMP" ]; then
    return
  fi
  log "debootstrap: Debian $BASE_SUITE minbase with $BASE_PACKAGES into $BASE_ROOTFS (about a minute)"
  local tmp=$BASE_ROOTFS.partial
  rm -rf "$tmp" "$BASE_ROOTFS"
  mkdir -p "$BASE_DIR"
  debootstrap --variant=minbase --include="$BASE_PACKAGES" "$BASE_SUITE" "$tmp" "$DEBIAN_MIRROR" \
    >"$BASE_DIR/debootstrap.log" 2>&1 \
    || die "debootstrap of Debian $BASE_SUITE failed: see $BASE_DIR/debootstrap.log (mirror $DEBIAN_MIRROR; set CANAL_BRIDGE_DEBIAN_MIRROR to another)"
  # What a slim image leaves out: package caches and lists, docs but their copyright files,
  # man pages, translations, logs; the build host's resolv.conf and hostname.
  rm -rf "$tmp"/var/cache/apt/* "$tmp"/var/lib/apt/lists/* "$tmp"/usr/share/man/* \
    "$tmp"/usr/share/info/* "$tmp"/usr/share/locale/* "$tmp"/var/cache/debconf/*-old \
    "$tmp"/etc/resolv.conf "$tmp"/etc/hostname
  find "$tmp"/usr/share/doc -type f ! -name copyright -delete
  find "$tmp"/var/log -type f -delete
  echo "$BASE_STAMP" >"$tmp/.canal-bridge-base"
  mv "$tmp" "$BASE_ROOTFS"
}

build_base_image() {
  local have
  have=$(image_buildah inspect --type image --format '{{index .ImageAnnotations "canal-bridge.base"}}' \
    "$BASE_IMAGE" 2>/dev/null || true)
  [ "$have" != "$BASE_STAMP" ] || return 0
  log "importing $BASE_ROOTFS as $BASE_IMAGE"
  local ctr mnt
  ctr=$(image_buildah from --quiet scratch)
  mnt=$(image_buildah mount "$ctr")
  tar -C "$BASE_ROOTFS" --exclude=./.canal-bridge-base -cf - . | tar -C "$mnt" -xpf -
  image_buildah umount "$ctr" >/dev/null
  image_buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --cmd python3 --annotation "canal-bridge.base=$BASE_STAMP" "$ctr"
  image_buildah commit --quiet --rm "$ctr" "$BASE_IMAGE" >/dev/null
}

# Step 2: the wheelhouse the image installs from, without reaching an index: native/'s abi3
# wheel, built by the same maturin step (pip's PEP 517 build) and cargo target folder as
# deploy/local/install.sh's venv build, and the locked dependencies (plus setuptools, the
# project's build backend) downloaded by the host's pip, through its cache.
build_wheelhouse() {
  local stamp=$WHEELS/.sources.sha256 sum lock=deploy/docker/requirements.lock
  sum=$(cat native/Cargo.toml native/Cargo.lock native/pyproject.toml native/src/*.rs "$lock" pyproject.toml \
    | sha256sum | cut -d' ' -f1)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$sum" ]; then return; fi
  log "building native/'s abi3 wheel and downloading the locked dependencies into $WHEELS"
  rm -rf "$WHEELS"
  mkdir -p "$WHEELS"
  CARGO_TARGET_DIR=$NATIVE_TARGET_DIR PIP_CACHE_DIR=$CACHE_DIR/pip \
    "$VENV_DIR/bin/pip" wheel -q --no-deps -w "$WHEELS" ./native >&2 \
    || die "building native/'s wheel failed (cargo's output above); it needs Rust >= 1.74 (rustup update)"
  compgen -G "$WHEELS/canal_bridge_native-*abi3*.whl" >/dev/null \
    || die "native/ did not build an abi3 wheel: see native/Cargo.toml (pyo3 abi3-py311)"
  PIP_CACHE_DIR=$CACHE_DIR/pip "$VENV_DIR/bin/pip" download -q --only-binary=:all: -d "$WHEELS" \
    -r "$lock" "setuptools>=77" >&2 \
    || die "downloading the locked dependencies from PyPI failed: see pip's output above"
  echo "$sum" >"$stamp"
}

# Step 3: the Dockerfile on the local base, with the host-built wheel.
build_image() {
  local version revision source image
  version=$("$VENV_DIR/bin/python" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')
  revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
  # Uncommitted changes are in the image too: say so.
  if [ "$revision" != unknown ] && [ -n "$(git status --porcelain -- bridge spark_jobs native pyproject.toml deploy/docker)" ]; then
    revision=$revision-dirty
  fi
  source=${CANAL_BRIDGE_IMAGE_SOURCE:-$(git config --get remote.origin.url || echo unknown)}
  image=localhost/canal-bridge:$version
  log "building $image (buildah, vfs, chroot isolation)"
  # No intermediate layers (vfs copies the whole tree per layer): the final image is the base
  # plus one layer. Stage images and containers do not outlive the build.
  image_buildah build --quiet --isolation chroot --layers=false --force-rm \
    -f deploy/docker/Dockerfile --ignorefile deploy/docker/Dockerfile.dockerignore \
    --build-arg PYTHON_IMAGE="$BASE_IMAGE" --build-arg NATIVE=prebuilt --build-context wheels="$WHEELS" \
    --build-arg PIP_OPTIONS="--no-index --find-links /wheels" \
    --build-arg VERSION="$version" --build-arg REVISION="$revision" --build-arg SOURCE="$source" \
    --annotation org.opencontainers.image.version="$version" \
    --annotation org.opencontainers.image.revision="$revision" \
    --annotation org.opencontainers.image.source="$source" \
    --annotation org.opencontainers.image.title=canal-bridge \
    -t "$image" . >/dev/null \
    || die "buildah build of $image failed: see the output above"
  image_buildah rmi --prune >/dev/null || true
  # Step 4: the archive.
  mkdir -p "$IMAGE_OUT"
  local archive=$IMAGE_OUT/canal-bridge-$version.oci.tar
  rm -f "$archive"
  image_buildah push --quiet "$image" "oci-archive:$archive:canal-bridge:$version" \
    || die "writing $archive failed: see the output above"
  "$VENV_DIR/bin/python" deploy/docker/archive.py "$archive" "canal-bridge:$version"
  local size
  size=$(image_buildah images --format '{{.Size}}' "$image")
  log "built $image ($size); archive $archive ($(du -h "$archive" | cut -f1))"
}

main() {
  preflight
  build_base_rootfs
  build_base_image
  build_wheelhouse
  build_image
}

main "$@"
