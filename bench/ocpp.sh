#!/usr/bin/env bash
# make bench-ocpp (also the last part of make bench): charge boxes over OCPP, on SQLite
# and on PostgreSQL, in one run each, with bench/ocpp: BOXES boxes connected to one
# server (the RSS of an idle connection, the time to connect them all), RATE status
# notifications per second spread over them (send to CALLRESULT, send to the event in
# the log), and closed-loop throughput over OCPP against the HTTP ingestion endpoint at
# CONNS senders. Writes the OCPP section of bench/results.md.
#
#   BOXES=10000 RATE=1000 CONNS=32 bench/ocpp.sh
#   STORES=sqlite bench/ocpp.sh      # one store only
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
BOXES=${BOXES:-10000}
RATE=${RATE:-1000}
CONNS=${CONNS:-32}
STORES=${STORES:-sqlite postgres}
FIRST=10001
PASSWORD=bench-ocpp-password-0123456789

# Thousands of sockets in the server and in the load tool: raise the open files limit.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
((BOXES + 1000 <= $(ulimit -n))) || die "ulimit -n is $(ulimit -n): too low for $BOXES boxes"
say "building chargenet and bench/ocpp"
(cd "$ROOT" && go build -o "$OUT/bin/chargenet" ./cmd/chargenet && go build -o "$OUT/bin/ocpp" ./bench/ocpp)
"$OUT/bin/ocpp" gen "$BOXES" "$FIRST" >"$OUT/boxes.json"

# prepare DATABASE: the boxes' inventory, their registrations, an ingest key (printed).
# Each step checks its own failure: set -e does not apply inside $(prepare) || die.
prepare() {
	"$OUT/bin/chargenet" import --database "$1" "$OUT/boxes.json" >&2 || return 1
	"$OUT/bin/ocpp" register "$1" "$BOXES" "$FIRST" "$PASSWORD" || return 1
	"$OUT/bin/chargenet" apikey create --database "$1" --name bench-ocpp-ingest --scope ingest 2>/dev/null
}

# measure LABEL DATABASE: serve DATABASE with the OCPP listener and run bench/ocpp
# against it; its figures go to $OUT/ocpp-LABEL.tsv.
measure() {
	local label=$1 db=$2 ingest port oport
	ingest=$(prepare "$db") || die "preparing $label failed"
	port=$(free_port)
	oport=$(free_port)
	SERVE_LOG=$OUT/serve-ocpp-$label.log serve_url "$db" "$port" --ocpp-addr "127.0.0.1:$oport" --ocpp-heartbeat 60s
	say "$label: $BOXES boxes, $RATE notifications/s, $CONNS senders (load average $(cut -d' ' -f1-3 /proc/loadavg))"
	"$OUT/bin/ocpp" run -label "$label" -ws "ws://127.0.0.1:$oport/ocpp/" -api "http://127.0.0.1:$port" -ingest-key "$ingest" \
		-api-key "$BENCH_KEY" -password "$PASSWORD" -boxes "$BOXES" -first "$FIRST" -pid "$SERVE_PID" -rate "$RATE" \
		-conns "$CONNS" | tee "$OUT/ocpp-$label.tsv" >&2 || die "bench/ocpp failed on $label (see $OUT/serve-ocpp-$label.log)"
	kill "$SERVE_PID" && wait "$SERVE_PID" || true
}

files=()
for store in $STORES; do
	case $store in
	sqlite)
		rm -f "$OUT/ocpp.db" "$OUT"/ocpp.db-*
		measure sqlite "sqlite:$OUT/ocpp.db"
		;;
	postgres)
		PGENV=$("$ROOT/scripts/pg-test-cluster.sh" start) || die "starting a PostgreSQL cluster failed"
		eval "$PGENV"
		ON_EXIT+=("\"$ROOT/scripts/pg-test-cluster.sh\" stop '$CHARGENET_PG_DIR'")
		measure postgres "$CHARGENET_TEST_POSTGRES"
		;;
	*) die "unknown store $store" ;;
	esac
	files+=("$OUT/ocpp-$store.tsv")
done
"$OUT/bin/ocpp" report "$ROOT/bench/results.md" "${files[@]}"
