#!/usr/bin/env bash
# Runs every fuzz target for a number of executions of its own (-fuzztime=Nx), prints
# the executions of each, and fails when a target ran fewer than it was given: on a
# loaded machine a time budget can pass entirely in the baseline run over the corpus,
# which is not counted, and end with 0 executions. The counts keep the whole run at
# about 2 to 3 minutes of an idle 2-core machine (about 165 s of CPU): a target's count
# reflects what one execution costs (every REST input of a server target also goes to an
# OCPI service: 3 to 6 requests; an input that finds new coverage is minimised, up to
# FUZZMINIMIZE, outside the count).
#
# Seed corpora live in testdata/fuzz/<target>/ beside each package; a failure writes the
# failing input there too, so it becomes a regression test of `go test`.
#
#   scripts/fuzz.sh               # CI-sized: each target's executions below
#   FUZZTIME=5m scripts/fuzz.sh   # a longer local run: every target for FUZZTIME (a
#                                 # duration, or Nx for N executions each)
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-}
# Minimising a new interesting input may take the engine's default 60 s, and the
# executions it makes are not counted: bound it so that a short run keeps fuzzing.
FUZZMINIMIZE=${FUZZMINIMIZE:-1s}
# package:target:executions
targets=(
	".:FuzzCursorDecode:5000"
	"./server:FuzzPatchBody:200"
	"./server:FuzzListQuery:200"
	"./server:FuzzImport:300"
	"./server:FuzzStatusNotification:200"
	"./server:FuzzWebhookCreate:200"
	"./server:FuzzInventoryWrite:200"
	"./server:FuzzWebhookTools:200"
	"./internal/httpcheck:FuzzDuplicateKey:2000"
	"./ocpi:FuzzOCPICredentials:300"
	"./ocpi:FuzzOCPILocations:500"
	"./ocpi:FuzzOCPIAuthorization:200"
	"./ocpp:FuzzMessage:300"
)
summary=()
start=$SECONDS
# corpus_files lists the inputs saved for a target (a finding writes a new one).
corpus_files() { ls "$1/testdata/fuzz/$2" 2>/dev/null | sort || true; }
for t in "${targets[@]}"; do
	IFS=: read -r pkg name want <<<"$t"
	budget=${FUZZTIME:-${want}x}
	least=0 # the executions the run must reach: its count, or 1 for a time budget
	case $budget in
	*x) least=${budget%x} ;;
	*) least=1 ;;
	esac
	log=$(mktemp)
	note=""
	began=$SECONDS
	for try in 1 2; do
		before=$(corpus_files "$pkg" "$name")
		if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$budget" -fuzzminimizetime "$FUZZMINIMIZE" "$pkg" >"$log" 2>&1; then
			break
		fi
		# Go's fuzzing coordinator can fail a run with a bare "context deadline exceeded"
		# when a time budget ends while a worker is mid-execution (a race in the engine,
		# not a finding: no failing input is written). Retry that once; anything else, or
		# a written input, is a failure.
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
	line=$(printf '%-24s %-10s %8s execs (at least %s) in %3d s%s' "$name" "$pkg" "$execs" "$least" $((SECONDS - began)) "$note")
	summary+=("$line")
	if ((execs < least)); then
		printf 'fuzz: %s\n' "${summary[@]}"
		echo "fuzz: $name ran $execs executions, fewer than $least: it did not fuzz" >&2
		exit 1
	fi
done
printf 'fuzz: %s\n' "${summary[@]}"
echo "fuzz: ${#targets[@]} targets in $((SECONDS - start)) s"
