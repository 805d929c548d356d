#!/usr/bin/env bash
# Build troubleshoot's support-bundle CLI from its Go module, cached by version. Prints the
# binary's path on stdout. The troubleshoot e2e test collects with it from the test cluster
# (CORONER_SUPPORT_BUNDLE).
#
# The module has replace directives, so `go install ...@vX` is refused: the module is
# downloaded and built inside a writable copy of itself, as its own Makefile builds it.
set -euo pipefail

TROUBLESHOOT_VERSION=${TROUBLESHOOT_VERSION:-v0.133.0}
CACHE=${CORONER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coroner-tools}
DIR=$CACHE/support-bundle-$TROUBLESHOOT_VERSION
BIN=$DIR/support-bundle

source "$(dirname "$0")/toolcache.sh"
tool_cached "$BIN" "support-bundle $TROUBLESHOOT_VERSION"
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
src=$(go mod download -json "github.com/replicatedhq/troubleshoot@$TROUBLESHOOT_VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"
echo "building support-bundle $TROUBLESHOOT_VERSION into $BIN (several minutes the first time)" >&2
# The tags and version variable of troubleshoot's Makefile (bin/support-bundle).
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
	-tags "netgo containers_image_ostree_stub exclude_graphdriver_devicemapper exclude_graphdriver_btrfs containers_image_openpgp" \
	-ldflags "-s -w -X github.com/replicatedhq/troubleshoot/pkg/version.version=$TROUBLESHOOT_VERSION" \
	-o "$work/support-bundle" ./cmd/troubleshoot
tool_install "$work/support-bundle" "$BIN"
