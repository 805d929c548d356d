#!/usr/bin/env bash
# Build kube-apiserver (or, with TOOL=kubectl, kubectl) from the k8s.io/kubernetes module,
# cached by version. Prints the binary's path on stdout.
#
# `go install k8s.io/kubernetes/cmd/kube-apiserver@vX` is refused because the
# module has replace directives, so we build it from a throwaway module that
# requires k8s.io/kubernetes and replaces each staging module with its
# published v0.Y.Z twin.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.34.1}
STAGING_VERSION=v0.${KUBE_VERSION#v1.}
MINOR=${STAGING_VERSION#v0.}
MINOR=${MINOR%%.*}
CACHE=${CORONER_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coroner-tools}
TOOL=${TOOL:-kube-apiserver}
case $TOOL in kube-apiserver | kubectl) ;; *) echo "TOOL must be kube-apiserver or kubectl" >&2; exit 2 ;; esac
BIN=$CACHE/$TOOL-$KUBE_VERSION

source "$(dirname "$0")/toolcache.sh"
tool_cached "$BIN" "$TOOL $KUBE_VERSION"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
{
	echo "module coroner.local/$TOOL"
	echo
	echo "go 1.24"
	echo
	echo "require k8s.io/kubernetes $KUBE_VERSION"
	echo
	# Every "k8s.io/x => ./staging/src/k8s.io/x" becomes "k8s.io/x => k8s.io/x v0.Y.Z".
	sed -n 's#^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#replace \1 => \1 '"$STAGING_VERSION"'#p' "$gomod"
} >go.mod
cat >tools.go <<GO
//go:build tools

package tools

import _ "k8s.io/kubernetes/cmd/$TOOL"
GO

echo "building $TOOL $KUBE_VERSION into $BIN (several minutes the first time)" >&2
GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true
GOFLAGS=-mod=mod go get "k8s.io/kubernetes/cmd/$TOOL@$KUBE_VERSION" >&2
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
	-ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$MINOR" \
	-o "$work/$TOOL" "k8s.io/kubernetes/cmd/$TOOL"
tool_install "$work/$TOOL" "$BIN"
