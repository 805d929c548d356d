# Sourced by the scripts that build a tool once into ~/.cache/coroner-tools and print its path.

# tool_cached BIN LABEL prints BIN and ends the script when the tool is built. Otherwise it
# takes BIN's lock and returns, so that two runs at once (two checkouts, make e2e beside make
# bench) build it once: the second waits for the first's lock, then finds the binary.
tool_cached() {
	local bin=$1 label=$2
	if [[ -x $bin ]]; then
		echo "$bin"
		exit 0
	fi
	mkdir -p "$(dirname "$bin")"
	exec 9>"$bin.lock"
	if ! flock -n 9; then
		echo "waiting for another build of $label to finish" >&2
		flock 9
	fi
	if [[ -x $bin ]]; then
		echo "$bin"
		exit 0
	fi
}

# tool_install BUILT BIN moves a freshly built binary into place by a rename (nobody ever runs a
# half-written binary) and prints its path.
tool_install() {
	mv "$1" "$2.tmp.$$"
	mv "$2.tmp.$$" "$2"
	echo "$2"
}
