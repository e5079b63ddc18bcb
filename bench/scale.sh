#!/usr/bin/env bash
# make bench-scale: import N (default 1,000,000) generated locations into an empty SQLite
# database and into an empty PostgreSQL database (a throw-away cluster), then measure a
# 25-item page of GET /v1/locations at several depths on each. Writes
# bench/scale-results.md and prints it.
#
# Each round measures every depth on both stores, each right beside the first page (the
# first page first in odd rounds, second in even ones), the depths in the opposite order
# in every other round; a depth against the first page is the median over the rounds of
# its ratio to the first page measured beside it, so that the machine's drift cancels.
#
#   N=1000000 ROUNDS=5 DURATION=3s bench/scale.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N=${N:-1000000}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3s}
need_wrk
build

DB=$OUT/scale.db
rm -f "$DB" "$DB"-*
say "generating $N locations (seed 42)"
"$OUT/bin/tool" gen "$N" 42 >"$OUT/scale.json"
say "importing them"
start=$(date +%s.%N)
"$OUT/bin/chargenet" import --database "sqlite:$DB" "$OUT/scale.json" >&2
IMPORT=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f s", e - s}')
SIZE=$(du -b "$DB" | awk '{printf "%.0f MB", $1 / 1e6}')
say "import took $IMPORT; database $SIZE"

say "PostgreSQL: a throw-away cluster; importing them"
PGENV=$("$ROOT/scripts/pg-test-cluster.sh" start) || die "starting a PostgreSQL cluster failed"
eval "$PGENV"
ON_EXIT+=("\"$ROOT/scripts/pg-test-cluster.sh\" stop '$CHARGENET_PG_DIR'")
PGURL=$CHARGENET_TEST_POSTGRES
"$OUT/bin/chargenet" migrate --database "$PGURL" >&2
start=$(date +%s.%N)
"$OUT/bin/chargenet" import --database "$PGURL" "$OUT/scale.json" >&2
PG_IMPORT=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f s", e - s}')
PG_SIZE=$("$CHARGENET_PG_BIN/psql" "$PGURL" -Atc "SELECT pg_database_size(current_database())" | awk '{printf "%.0f MB", $1 / 1e6}')
say "import took $PG_IMPORT; database $PG_SIZE"
# What autovacuum would start on its own within a minute of the import, and run beside the
# first rounds: the steady state is measured, not the vacuum.
start=$(date +%s.%N)
"$CHARGENET_PG_BIN/psql" "$PGURL" -qc "VACUUM (ANALYZE)" >&2
PG_VACUUM=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f s", e - s}')
say "VACUUM (ANALYZE) took $PG_VACUUM"
rm -f "$OUT/scale.json"

PORT=$(free_port)
serve "$DB" "$PORT" --read-cache-mb 0 # every page read from the database: the keyset reads are measured
SQLITE_PID=$SERVE_PID
PG_PORT=$(free_port)
SERVE_LOG=$OUT/serve-pg.log serve_url "$PGURL" "$PG_PORT"
PG_PID=$SERVE_PID
RAW=$OUT/scale-raw.tsv
: >"$RAW"
depths=()
for d in 10000 100000; do ((d < N - 25)) && depths+=("$d"); done
depths+=($((N - 25)))
# in_order R: the depths after the first page, in the opposite order in even rounds.
in_order() {
	if (($1 % 2)); then
		printf '%s\n' "${depths[@]}"
	else
		printf '%s\n' "${depths[@]}" | tac
	fi
}
# pair R D TARGET FIRST DEEP: wrk on the first page (recorded as depth 0/D) and on depth
# D of TARGET, one right after the other: the first page first in odd rounds.
pair() {
	local r=$1 d=$2 target=$3 first=$4 deep=$5
	if ((r % 2)); then
		wrk_run "0/$d" "$target" "$r" "$first" get.lua 8 "$DURATION"
		wrk_run "$d" "$target" "$r" "$deep" get.lua 8 "$DURATION"
	else
		wrk_run "$d" "$target" "$r" "$deep" get.lua 8 "$DURATION"
		wrk_run "0/$d" "$target" "$r" "$first" get.lua 8 "$DURATION"
	fi
}
for ((r = 1; r <= ROUNDS; r++)); do
	for d in $(in_order "$r"); do
		query="/v1/locations?limit=25&cursor=$("$OUT/bin/tool" cursor "$SECRET" locations "$("$OUT/bin/tool" id $((d - 1)))")"
		for target in full pg; do
			port=$PORT
			[[ $target == pg ]] && port=$PG_PORT
			first="http://127.0.0.1:$port/v1/locations?limit=25"
			url="http://127.0.0.1:$port$query"
			if ((r == 1)); then
				for check in "0 $first" "$d $url"; do
					want=$("$OUT/bin/tool" id "${check%% *}")
					curl -fsS -H "Authorization: Bearer $BENCH_KEY" "${check#* }" | grep -q "\"id\":\"$want\"" ||
						die "the page at depth ${check%% *} ($target) does not start with $want"
				done
			fi
			pair "$r" "$d" "$target" "$first" "$url"
		done
	done
done
# The location change list since a time before every location: the same depths, each page
# after the first reached through the cursor the service gave when the list was walked once.
CHANGE_SINCE=2025-01-01T00:00:00Z # bench/tool report.go: changeSince
declare -A change_cursor
for target in full pg; do
	port=$PORT
	[[ $target == pg ]] && port=$PG_PORT
	say "walking the change list ($target) for its cursors"
	while read -r d c; do
		change_cursor[$target.$d]=$c
	done < <("$OUT/bin/tool" change-cursors "http://127.0.0.1:$port" "$BENCH_KEY" "$CHANGE_SINCE" "${depths[@]}")
done
for ((r = 1; r <= ROUNDS; r++)); do
	for d in $(in_order "$r"); do
		for target in full pg; do
			port=$PORT
			[[ $target == pg ]] && port=$PG_PORT
			first="http://127.0.0.1:$port/v1/locations?updated_since=$CHANGE_SINCE&limit=25"
			url="$first&cursor=${change_cursor[$target.$d]}"
			if ((r == 1)); then
				for u in "$first" "$url"; do
					n=$(curl -fsS -H "Authorization: Bearer $BENCH_KEY" "$u" | grep -o '"id":"LOC-' | wc -l)
					((n == 25)) || die "the change-list page $u ($target) holds $n locations, not 25"
				done
			fi
			pair "$r" "$d" "$target-changes" "$first" "$url"
		done
	done
done
RSS=$(peak_rss "$SQLITE_PID")
PG_RSS=$(peak_rss "$PG_PID")
"$OUT/bin/tool" scale-report "$RAW" "$RSS" "$IMPORT" "$SIZE" "$N" "$PG_IMPORT" "$PG_SIZE" "$PG_RSS" "$PG_VACUUM" | tee "$ROOT/bench/scale-results.md"
