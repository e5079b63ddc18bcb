#!/usr/bin/env bash
# Runs every fuzz target for FUZZTIME (default 5s) and prints the executions of each.
# Seed corpora live in testdata/fuzz/<target>/ beside each package; a failure writes the
# failing input there too, so it becomes a regression test of `go test`.
#
#   scripts/fuzz.sh               # CI-sized
#   FUZZTIME=5m scripts/fuzz.sh   # a longer local run
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-5s}
targets=(
	".:FuzzCursorDecode"
	"./server:FuzzPatchBody"
	"./server:FuzzListQuery"
	"./server:FuzzImport"
)
summary=()
for t in "${targets[@]}"; do
	pkg=${t%%:*} name=${t##*:}
	log=$(mktemp)
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg" >"$log" 2>&1; then
		cat "$log"
		echo "fuzz: $name FAILED (the failing input is under $pkg/testdata/fuzz/$name)" >&2
		rm -f "$log"
		exit 1
	fi
	execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
	rm -f "$log"
	summary+=("$(printf '%-18s %-10s %8s execs in %s' "$name" "$pkg" "$execs" "$FUZZTIME")")
done
printf 'fuzz: %s\n' "${summary[@]}"
