#!/usr/bin/env bash
# Build versitygw (an S3-compatible gateway; its posix backend serves a directory as buckets)
# from its Go module, cached by version. Prints the binary's path on stdout. The bundle-store
# tests run it as their S3 server (CORONER_VERSITYGW).
set -euo pipefail

VERSITYGW_VERSION=${VERSITYGW_VERSION:-v1.8.0}
CACHE=${CORONER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coroner-tools}
BIN=$CACHE/versitygw-$VERSITYGW_VERSION

if [[ -x $BIN ]]; then
	echo "$BIN"
	exit 0
fi
mkdir -p "$CACHE"
# Two runs at once build it once: the second waits for the first's lock, then finds the binary.
exec 9>"$BIN.lock"
if ! flock -n 9; then
	echo "waiting for another build of versitygw $VERSITYGW_VERSION to finish" >&2
	flock 9
fi
if [[ -x $BIN ]]; then
	echo "$BIN"
	exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building versitygw $VERSITYGW_VERSION into $BIN (a few minutes the first time)" >&2
CGO_ENABLED=0 GOBIN="$work" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" >&2
mv "$work/versitygw" "$BIN.tmp.$$"
mv "$BIN.tmp.$$" "$BIN" # a rename: nobody ever runs a half-written binary
echo "$BIN"
