#!/usr/bin/env bash
# make bench-scale: import N (default 1,000,000) generated locations into an empty SQLite
# database, then measure a 25-item page of GET /v1/locations at several depths.
# Writes bench/scale-results.md and prints it.
#
#   N=1000000 ROUNDS=3 DURATION=3s bench/scale.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
N=${N:-1000000}
ROUNDS=${ROUNDS:-3}
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
rm -f "$OUT/scale.json"
SIZE=$(du -b "$DB" | awk '{printf "%.0f MB", $1 / 1e6}')
say "import took $IMPORT; database $SIZE"

PORT=$(free_port)
serve "$DB" "$PORT" --read-cache-mb 0 # every page read from the database: the keyset reads are measured
RAW=$OUT/scale-raw.tsv
: >"$RAW"
depths=(0)
for d in 10000 100000; do ((d < N - 25)) && depths+=("$d"); done
depths+=($((N - 25)))
for ((r = 1; r <= ROUNDS; r++)); do
	for d in "${depths[@]}"; do
		url="http://127.0.0.1:$PORT/v1/locations?limit=25"
		if ((d > 0)); then
			url+="&cursor=$("$OUT/bin/tool" cursor "$SECRET" locations "$("$OUT/bin/tool" id $((d - 1)))")"
		fi
		if ((r == 1)); then
			want=$("$OUT/bin/tool" id "$d")
			curl -fsS -H "Authorization: Bearer $BENCH_KEY" "$url" | grep -q "\"id\":\"$want\"" ||
				die "the page at depth $d does not start with $want"
		fi
		wrk_run "$d" full "$r" "$url" get.lua 8 "$DURATION"
	done
done
RSS=$(peak_rss "$SERVE_PID")
"$OUT/bin/tool" scale-report "$RAW" "$RSS" "$IMPORT" "$SIZE" "$N" | tee "$ROOT/bench/scale-results.md"
