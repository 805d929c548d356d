#!/usr/bin/env bash
# Build versitygw (an S3-compatible gateway; its posix backend serves a directory as buckets)
# from its Go module, cached by version. Prints the binary's path on stdout. The bundle-store
# tests run it as their S3 server (CORONER_VERSITYGW).
set -euo pipefail

VERSITYGW_VERSION=${VERSITYGW_VERSION:-v1.8.0}
CACHE=${CORONER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coroner-tools}
BIN=$CACHE/versitygw-$VERSITYGW_VERSION

source "$(dirname "$0")/toolcache.sh"
tool_cached "$BIN" "versitygw $VERSITYGW_VERSION"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building versitygw $VERSITYGW_VERSION into $BIN (a few minutes the first time)" >&2
CGO_ENABLED=0 GOBIN="$work" GOFLAGS=-mod=mod go install -trimpath -ldflags "-s -w" "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION" >&2
tool_install "$work/versitygw" "$BIN"
