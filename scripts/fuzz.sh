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
# Minimising a new interesting input may take the engine's default 60 s, and the
# executions it makes are not counted: bound it so that a short run keeps fuzzing.
FUZZMINIMIZE=${FUZZMINIMIZE:-1s}
targets=(
	".:FuzzCursorDecode"
	"./server:FuzzPatchBody"
	"./server:FuzzListQuery"
	"./server:FuzzImport"
	"./server:FuzzStatusNotification"
	"./server:FuzzWebhookCreate"
	"./server:FuzzInventoryWrite"
	"./server:FuzzWebhookTools"
	"./internal/httpcheck:FuzzDuplicateKey"
	"./ocpi:FuzzOCPICredentials"
	"./ocpi:FuzzOCPILocations"
	"./ocpi:FuzzOCPIAuthorization"
	"./ocpp:FuzzMessage"
)
summary=()
# corpus_files lists the inputs saved for a target (a finding writes a new one).
corpus_files() { ls "$1/testdata/fuzz/$2" 2>/dev/null | sort || true; }
for t in "${targets[@]}"; do
	pkg=${t%%:*} name=${t##*:}
	log=$(mktemp)
	note=""
	for try in 1 2; do
		before=$(corpus_files "$pkg" "$name")
		if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZE" "$pkg" >"$log" 2>&1; then
			break
		fi
		# Go's fuzzing coordinator can fail a run with a bare "context deadline exceeded"
		# when -fuzztime ends while a worker is mid-execution (a race in the engine, not
		# a finding: no failing input is written). Retry that once; anything else, or a
		# written input, is a failure.
		if [[ $try == 1 && $(corpus_files "$pkg" "$name") == "$before" ]] &&
			grep -q '^    context deadline exceeded$' "$log" && ! grep -q -- '--- FAIL: .*/' "$log" &&
			! grep -qE 'panic|Failing input' "$log"; then
			note=" (retried once after the engine's end-of-run deadline race)"
			continue
		fi
		cat "$log"
		echo "fuzz: $name FAILED (a failing input, if one was found, is under $pkg/testdata/fuzz/$name)" >&2
		rm -f "$log"
		exit 1
	done
	execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo 0)
	rm -f "$log"
	summary+=("$(printf '%-24s %-10s %8s execs in %s%s' "$name" "$pkg" "$execs" "$FUZZTIME" "$note")")
done
printf 'fuzz: %s\n' "${summary[@]}"
