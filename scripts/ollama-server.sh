#!/usr/bin/env bash
# Prints the path of an Ollama server binary built from the same module version as the client
# in go.mod, building it (cgo, CPU only) on first use and caching it under
# ${XDG_CACHE_HOME:-$HOME/.cache}/coroner-tools/. Used by `make e2e-llm`.
#
# The module zip drops llama.cpp's vendor/ folder: Debian's nlohmann-json3-dev and libstb-dev
# provide those headers; miniaudio (audio input only) gets a stub header that declares what
# llama.cpp's mtmd helper calls and always fails to decode.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
ver=$($GO list -m -f '{{.Version}}' github.com/ollama/ollama)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/coroner-tools"
bin="$cache/ollama-$ver"
if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

missing=()
for pkg in nlohmann-json3-dev libstb-dev; do
	dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "ollama-server: installing ${missing[*]}" >&2
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
fi

mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/stub/miniaudio" "$work/bin"
# The declarations mtmd-helper.cpp uses; decoding always fails, so audio input is refused.
cat >"$work/stub/miniaudio/miniaudio.h" <<'H'
#pragma once
#include <stddef.h>
typedef int ma_result;
typedef unsigned long long ma_uint64;
typedef int ma_format;
#define MA_SUCCESS 0
#define MA_ERROR (-1)
#define ma_format_f32 5
typedef struct { ma_format format; unsigned int channels, sampleRate; } ma_decoder_config;
typedef struct { int unused; } ma_decoder;
static inline ma_decoder_config ma_decoder_config_init(ma_format f, unsigned int c, unsigned int r) { ma_decoder_config d = {f, c, r}; return d; }
static inline ma_result ma_decoder_init_memory(const void *p, size_t n, const ma_decoder_config *c, ma_decoder *d) { (void)p; (void)n; (void)c; (void)d; return MA_ERROR; }
static inline ma_result ma_decoder_get_length_in_pcm_frames(ma_decoder *d, ma_uint64 *n) { (void)d; *n = 0; return MA_ERROR; }
static inline ma_result ma_decoder_read_pcm_frames(ma_decoder *d, void *o, ma_uint64 n, ma_uint64 *r) { (void)d; (void)o; (void)n; *r = 0; return MA_ERROR; }
static inline ma_result ma_decoder_uninit(ma_decoder *d) { (void)d; return MA_SUCCESS; }
H

echo "ollama-server: building github.com/ollama/ollama@$ver (takes several minutes once)" >&2
start=$(date +%s)
# go install pkg@version builds with the server's own go.mod, outside coroner's module graph.
(
	cd "$work"
	GOBIN="$work/bin" CGO_ENABLED=1 \
		CGO_CPPFLAGS="-I$work/stub" CGO_CFLAGS="-O2 -g0" CGO_CXXFLAGS="-O2 -g0" \
		$GO install -trimpath \
		-ldflags "-s -w -X github.com/ollama/ollama/version.Version=${ver#v}" \
		"github.com/ollama/ollama@$ver"
)
mv "$work/bin/ollama" "$bin.tmp.$$"
mv "$bin.tmp.$$" "$bin"
echo "ollama-server: built in $(($(date +%s) - start))s: $bin" >&2
echo "$bin"
