"""The Java side of bench/compare, fetched once and cached under var/cache (never in tests/CI).

- canal 1.1.7: its jars from Maven Central (``mvn dependency:copy-dependencies`` on
  bench/compare/canal/pom.xml, local repository var/cache/m2 as deploy/local/install.sh does),
  plus bench/compare/canal/CanalBenchLauncher.java compiled against them (host Java 17).
- Debezium Server: the ``debezium-server-dist`` tar.gz of each release the sources use
  (``settings.DEBEZIUM_RELEASES``) from Maven Central, unpacked.
- Java 21 for Debezium: ``openjdk-21-jre-headless`` installed into the Debian sid root file
  system deploy/local/install.sh made for MySQL (var/cache/sid-rootfs), run chrooted.

Every step is skipped when its result is there; a failure names what to check and stops.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VAR = Path(os.environ.get("CANAL_BRIDGE_VAR_DIR", ROOT / "var"))
CACHE = VAR / "cache"
COMPARE = CACHE / "compare"
SID_ROOTFS = CACHE / "sid-rootfs"
CANAL_DIR = Path(__file__).resolve().parent / "canal"
CANAL_LIBS = COMPARE / "canal-1.1.7-libs"
CANAL_LAUNCHER = COMPARE / "canal-launcher"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
SID_JAVA = "/usr/lib/jvm/java-21-openjdk-amd64/bin/java"
IN_ROOT = "/srv/compare"  # where COMPARE is bind-mounted inside the sid root


class ArtifactError(RuntimeError):
    pass


def _run(command: list[str], log: Path, what: str) -> None:
    with log.open("wb") as out:
        done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise ArtifactError(f"{what} failed (exit {done.returncode}): see {log}")


def _digest(*paths: Path) -> str:
    return hashlib.sha256(b"".join(p.read_bytes() for p in paths)).hexdigest()


def canal_classpath() -> str:
    """canal's jars and the compiled launcher, resolved and built when missing or stale."""
    COMPARE.mkdir(parents=True, exist_ok=True)
    pom, source = CANAL_DIR / "pom.xml", CANAL_DIR / "CanalBenchLauncher.java"
    stamp = CANAL_LIBS / ".pom.sha256"
    if not stamp.exists() or stamp.read_text() != _digest(pom):
        shutil.rmtree(CANAL_LIBS, ignore_errors=True)
        print(f"resolving canal 1.1.7 from Maven Central into {CANAL_LIBS}", flush=True)
        _run(
            [
                "mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(pom),
                f"-Dmaven.repo.local={CACHE / 'm2'}", "dependency:copy-dependencies",
                f"-DoutputDirectory={CANAL_LIBS}", "-DincludeScope=runtime",
            ],
            COMPARE / "canal-mvn.log",
            "resolving canal's jars (check network access to Maven Central)",
        )  # fmt: skip
        stamp.write_text(_digest(pom))
    built = CANAL_LAUNCHER / ".source.sha256"
    if not built.exists() or built.read_text() != _digest(source, pom):
        shutil.rmtree(CANAL_LAUNCHER, ignore_errors=True)
        CANAL_LAUNCHER.mkdir(parents=True)
        _run(
            ["javac", "--release", "17", "-nowarn", "-cp", f"{CANAL_LIBS}/*",
             "-d", str(CANAL_LAUNCHER), str(source)],
            COMPARE / "canal-javac.log",
            "compiling CanalBenchLauncher (needs javac: apt-get install openjdk-17-jdk-headless)",
        )  # fmt: skip
        built.write_text(_digest(source, pom))
    return f"{CANAL_LAUNCHER}:{CANAL_LIBS}/*"


def debezium_home(version: str) -> Path:
    """Debezium Server ``version`` (``3.6.1.Final``) unpacked under var/cache/compare,
    downloaded once."""
    home = COMPARE / f"debezium-server-{version}"
    if (home / "lib").is_dir():
        return home
    COMPARE.mkdir(parents=True, exist_ok=True)
    name = f"debezium-server-dist-{version}.tar.gz"
    archive = COMPARE / name
    if not archive.exists():
        url = f"{MAVEN_CENTRAL}/io/debezium/debezium-server-dist/{version}/{name}"
        print(f"downloading {url}", flush=True)
        partial = archive.with_suffix(".part")
        try:
            urllib.request.urlretrieve(url, partial)
        except OSError as exc:
            raise ArtifactError(f"downloading {url} failed: {exc}") from exc
        partial.rename(archive)
    unpacking = COMPARE / "debezium-unpacking"
    shutil.rmtree(unpacking, ignore_errors=True)
    with tarfile.open(archive) as tar:
        tar.extractall(unpacking, filter="data")
    (unpacking / "debezium-server").rename(home)
    unpacking.rmdir()
    return home


def in_sid(command: list[str]) -> list[str]:
    """``command`` run chrooted in the sid root, in a mount namespace of its own where /proc
    is mounted and var/cache/compare is bind-mounted at /srv/compare (deploy/local/services.sh
    runs MySQL the same way). The mounts vanish with the process; the command keeps the PID
    (unshare, sh and chroot exec into one another), so its CPU and memory are its own."""
    script = (
        'mount --bind "$1" "$2/srv/compare" && mount -t proc proc "$2/proc" '
        '&& root=$2 && shift 2 && exec chroot "$root" "$@"'
    )
    return [
        "unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script,
        "in_sid", str(COMPARE), str(SID_ROOTFS), *command,
    ]  # fmt: skip


def sid_java21() -> str:
    """Java 21 inside the sid root (its path there), installed on first use (needs root)."""
    if (SID_ROOTFS / SID_JAVA.lstrip("/")).exists():
        (SID_ROOTFS / IN_ROOT.lstrip("/")).mkdir(parents=True, exist_ok=True)
        return SID_JAVA
    if not (SID_ROOTFS / "usr").is_dir():
        raise ArtifactError(
            f"no Debian sid root in {SID_ROOTFS}: run deploy/local/install.sh mysql first"
        )
    if os.getuid() != 0:
        raise ArtifactError("installing Java 21 into the sid root needs root: rerun as root")
    print(f"installing openjdk-21-jre-headless into {SID_ROOTFS}", flush=True)
    (SID_ROOTFS / IN_ROOT.lstrip("/")).mkdir(parents=True, exist_ok=True)
    # The sid mirror's Release file may be older than its Valid-Until by our clock.
    install = (
        "apt-get -o Acquire::Check-Valid-Until=false update -qq && "
        "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "
        "openjdk-21-jre-headless && rm -f /var/cache/apt/archives/*.deb"
    )
    COMPARE.mkdir(parents=True, exist_ok=True)
    _run(in_sid(["sh", "-c", install]), COMPARE / "sid-java21.log", "installing Java 21")
    return SID_JAVA


def host_path_in_sid(path: Path) -> str:
    """Where a path under var/cache/compare is seen inside the sid root."""
    return f"{IN_ROOT}/{path.resolve().relative_to(COMPARE.resolve())}"
