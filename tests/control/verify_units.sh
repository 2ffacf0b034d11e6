#!/usr/bin/env bash
# The shipped systemd units parse: `systemd-analyze verify` on copies that point at the built
# binaries. It exits 0 even on a bad directive, so any message it prints is a failure.
# Usage: verify_units.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
command -v systemd-analyze >/dev/null || { echo "no systemd-analyze: skipped"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed -e "s|@BINDIR@|$build/dataplane|; s|@DOCDIR@|$src|" \
  "$src/config/floodgate-dataplane.service.in" >"$work/floodgate-dataplane.service"
sed -e "s|@BINDIR@|$build/control|; s|@DOCDIR@|$src|" \
  "$src/config/floodctl.service.in" >"$work/floodctl.service"
# Their Documentation= names the man pages, which verify looks up: the tree's, as man finds them.
mkdir -p "$work/man/man8"
cp "$src/man/floodgate.8" "$src/man/floodctl.8" "$work/man/man8/"
out=$(cd "$work" && MANPATH="$work/man" systemd-analyze verify ./floodgate-dataplane.service \
  ./floodctl.service 2>&1)
if [ -n "$out" ]; then echo "$out"; exit 1; fi
echo "both units verify cleanly"
