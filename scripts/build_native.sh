#!/usr/bin/env bash
# Build the compiled chunk loop (native/fcrc32_chunk.c) into parsers/_native/, where
# ibdtool.parsers.fcrc32_native loads it (docs/install.md, "The compiled chunk loop").
# Needs a C compiler and zlib's headers (Debian: gcc, libc6-dev, zlib1g-dev; scripts/setup.sh
# installs them and runs this). Without the library every scan takes the Python path.
set -euo pipefail
cd "$(dirname "$0")/.."
out=parsers/_native/libfcrc32_chunk.so
mkdir -p parsers/_native
# built beside it, then renamed over it: a process that has the old one loaded keeps it
tmp=$(mktemp parsers/_native/.build.XXXXXX)
trap 'rm -f "$tmp"' EXIT
# the source's SHA-256 goes in, for the tests to tell a library older than its source
sha=$(sha256sum native/fcrc32_chunk.c | cut -d' ' -f1)
"${CC:-cc}" -O2 -shared -fPIC -Wall -Wextra -Werror -DFCRC32_SOURCE="\"$sha\"" \
  -o "$tmp" native/fcrc32_chunk.c -lz
chmod 644 "$tmp"
mv -f "$tmp" "$out"
echo "build_native: $out" >&2
