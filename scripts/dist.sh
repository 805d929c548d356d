#!/usr/bin/env bash
# make dist: everything a release publishes, into $DIST_DIR (default dist/), from a clean clone
# and with no base image pulled:
#   coroner-VERSION-OS-ARCH.tar.gz     static binary (CGO_ENABLED=0, -trimpath) + kubectl_complete-coroner,
#                                      for linux and darwin on amd64 and arm64
#   kubectl-coroner-VERSION-OS-ARCH.tar.gz   the same, the binary named as a kubectl plugin (krew's)
#   coroner.yaml                       the krew plugin manifest (kubectl coroner)
#   coroner[-watch]-VERSION-linux-ARCH.image.tar   images for podman/docker load
#   oci/coroner, oci/coroner-watch     the same images as OCI layouts (both platforms each)
#   SHA256SUMS                         sha256sum -c reads it
# VERSION comes from git describe; DIST_URL is where the archives will be downloaded from (the
# krew manifest names it); DIST_PLATFORMS picks platforms (images are made for the linux ones).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
OUT=${DIST_DIR:-dist}
PLATFORMS=${DIST_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
DIST_URL=${DIST_URL:-https://github.com/coroner-dev/coroner/releases/download/$VERSION}
CA=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
# Archive and image times are the commit's, so the same commit gives the same bytes.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}

rm -rf "$OUT"
mkdir -p "$OUT"
images=()
for p in $PLATFORMS; do
	os=${p%/*} arch=${p#*/}
	name=coroner-$VERSION-$os-$arch
	dir=$OUT/$name
	mkdir -p "$dir"
	echo "building $p" >&2
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch $GO build -trimpath -ldflags "-s -w -X main.version=$VERSION" \
		-o "$dir/coroner" ./cmd/coroner
	cp scripts/kubectl_complete-coroner "$dir/"
	archive() { # archive NAME FILE...: a reproducible .tar.gz of files of $dir
		local out=$1
		shift
		tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
			-C "$dir" -cf - "$@" | gzip -n -9 >"$OUT/$out.tar.gz"
	}
	archive "$name" coroner kubectl_complete-coroner
	# krew installs the files of an archive under their own names and links kubectl-coroner to
	# the bin it names: its archive holds the binary as kubectl-coroner.
	cp "$dir/coroner" "$dir/kubectl-coroner"
	archive "kubectl-$name" kubectl-coroner kubectl_complete-coroner
	rm "$dir/kubectl-coroner"
	[ "$os" = linux ] && images+=("$p=$dir/coroner")
done
cp scripts/kubectl_complete-coroner "$OUT/"

if [ ${#images[@]} -gt 0 ]; then
	$GO run ./internal/ociimage/cmd/mkimage -version "$VERSION" -revision "$(git rev-parse HEAD 2>/dev/null || true)" \
		-ca "$CA" -out "$OUT" "${images[@]}" >/dev/null
fi

# The krew manifest: one platform entry per archive, selected by os and arch; krew copies the
# binary in as kubectl-coroner.
{
	cat <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: coroner
spec:
  version: $VERSION
  homepage: https://github.com/coroner-dev/coroner
  shortDescription: Name the root cause of a failed distributed training job
  description: |
    coroner collects a failed training job (PyTorchJob, TrainJob, MPIJob, JobSet, batch Job...)
    with its pods, events, nodes and logs into a bundle, and names the root cause with the log
    line that shows it: which rank failed first and why, who is at fault, whether a retry helps.
      kubectl coroner collect pytorchjob/train-job -n ml
      kubectl coroner analyze coroner-ml-train-job-*.tar.gz -o report.html
    For completion of kubectl coroner, put kubectl_complete-coroner (in the plugin's
    directory, ~/.krew/store/coroner/VERSION) on PATH.
  platforms:
YAML
	for p in $PLATFORMS; do
		os=${p%/*} arch=${p#*/}
		name=coroner-$VERSION-$os-$arch
		cat <<YAML
  - selector:
      matchLabels:
        os: $os
        arch: $arch
    uri: $DIST_URL/kubectl-$name.tar.gz
    sha256: $(sha256sum "$OUT/kubectl-$name.tar.gz" | cut -d' ' -f1)
    bin: kubectl-coroner
YAML
	done
} >"$OUT/coroner.yaml"

cd "$OUT"
shopt -s nullglob
sha256sum -- *.tar.gz *.image.tar coroner.yaml kubectl_complete-coroner >SHA256SUMS
ls -1d -- *.tar.gz *.image.tar coroner.yaml kubectl_complete-coroner SHA256SUMS oci/*
