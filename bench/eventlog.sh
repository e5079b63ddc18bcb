#!/usr/bin/env bash
# make bench-eventlog: how fast a partner reads the event log. Fills the log of a fresh
# demo database with wrk PATCHes spread over the demo EVSEs (one event each) for
# FILL, then pages through the whole log with limit 100 ROUNDS times (bench/tool
# events) and prints events per second, on SQLite and, with PG=1, on PostgreSQL.
#
#   FILL=20s ROUNDS=3 PG=1 bench/eventlog.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
FILL=${FILL:-20s}
ROUNDS=${ROUNDS:-3}
PG=${PG:-0}
need_wrk
build
DB=$OUT/eventlog.db
rm -f "$DB"*
databases=("sqlite:$DB")
if [[ $PG == 1 ]]; then
	PGENV=$("$ROOT/scripts/pg-test-cluster.sh" start) || die "starting a PostgreSQL cluster failed"
	eval "$PGENV"
	ON_EXIT+=("\"$ROOT/scripts/pg-test-cluster.sh\" stop '$CHARGENET_PG_DIR'")
	databases+=("$CHARGENET_TEST_POSTGRES")
fi
for db in "${databases[@]}"; do
	store=sqlite
	[[ $db == postgres* ]] && store=postgres
	port=$(free_port)
	SERVE_LOG=$OUT/eventlog-$store.log serve_url "$db" "$port" --demo --webhook-dispatch=false
	base=http://127.0.0.1:$port
	wrk -t2 -c32 -d"$FILL" -s "$ROOT/bench/wrk/patch-spread.lua" "$base/v2/evses/1002/connectors/1" >/dev/null
	for ((r = 1; r <= ROUNDS; r++)); do
		IFS=$'\t' read -r events pages secs rate < <("$OUT/bin/tool" events "$base" "$BENCH_KEY" 100) || die "reading the log failed"
		printf '%s round %d: %s events in %s pages of 100 in %s s: %s events/s\n' "$store" "$r" "$events" "$pages" "$secs" "$rate"
	done
	kill "$SERVE_PID" && wait "$SERVE_PID" || true
done
