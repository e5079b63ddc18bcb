#!/usr/bin/env bash
# make bench-scale: import N (default 1,000,000) generated locations into an empty SQLite
# database and into an empty PostgreSQL database (a throw-away cluster), then measure a
# 25-item page of GET /v1/locations at several depths on each, the location change list
# at the same depths, and an OCPI Locations page of 100 at each depth, reached through the
# Link the service hands out. Writes bench/scale-results.md and prints it.
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

# Both servers answer OCPI as NL CNE, and read the bench's eMSP on loopback during its
# registration (--webhook-allow-insecure).
OCPI_FLAGS=(--ocpi-country-code NL --ocpi-party-id CNE --webhook-allow-insecure)
PORT=$(free_port)
# Every page read from the database: the keyset reads are measured.
serve "$DB" "$PORT" --read-cache-mb 0 "${OCPI_FLAGS[@]}"
SQLITE_PID=$SERVE_PID
PG_PORT=$(free_port)
SERVE_LOG=$OUT/serve-pg.log serve_url "$PGURL" "$PG_PORT" "${OCPI_FLAGS[@]}"
PG_PID=$SERVE_PID
RAW=$OUT/scale-raw.tsv
: >"$RAW"
depths=()
for d in 10000 100000; do ((d < N - 25)) && depths+=("$d"); done
depths+=($((N - 25)))
# in_order R DEPTH...: the depths after the first page, in the opposite order in even
# rounds.
in_order() {
	local r=$1
	shift
	if ((r % 2)); then
		printf '%s\n' "$@"
	else
		printf '%s\n' "$@" | tac
	fi
}
# pair R D TARGET FIRST DEEP [SCRIPT]: wrk (SCRIPT, default get.lua) on the first page
# (recorded as depth 0/D) and on depth D of TARGET, one right after the other: the first
# page first in odd rounds.
pair() {
	local r=$1 d=$2 target=$3 first=$4 deep=$5 script=${6:-get.lua}
	if ((r % 2)); then
		wrk_run "0/$d" "$target" "$r" "$first" "$script" 8 "$DURATION"
		wrk_run "$d" "$target" "$r" "$deep" "$script" 8 "$DURATION"
	else
		wrk_run "$d" "$target" "$r" "$deep" "$script" 8 "$DURATION"
		wrk_run "0/$d" "$target" "$r" "$first" "$script" 8 "$DURATION"
	fi
}
for ((r = 1; r <= ROUNDS; r++)); do
	for d in $(in_order "$r" "${depths[@]}"); do
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
	for d in $(in_order "$r" "${depths[@]}"); do
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
# OCPI Locations, pages of 100 (the last one full), in last_updated order: a partner
# registered through the handshake on each store; the page at each depth reached through
# the Link of the page before it, whose opaque position names the last location before it.
ocpi_depths=()
for d in 10000 100000; do ((d < N - 100)) && ocpi_depths+=("$d"); done
ocpi_depths+=($((N - 100)))
declare -A ocpi_want ocpi_token ocpi_url
while read -r d id; do
	ocpi_want[$d]=$id
done < <("$OUT/bin/tool" ocpi-ids "$N" 42 0 "${ocpi_depths[@]}")
for target in full pg; do
	port=$PORT db=sqlite:$DB
	[[ $target == pg ]] && port=$PG_PORT db=$PGURL
	base=http://127.0.0.1:$port
	say "OCPI ($target): registering a partner, reading the Link at each depth"
	a=$("$OUT/bin/chargenet" ocpi register --database "$db" --name "bench-$target" "${OCPI_FLAGS[@]}" 2>/dev/null) ||
		die "chargenet ocpi register ($target) failed"
	token=$("$OUT/bin/tool" ocpi-register "$base/ocpi/versions" "$a") || die "the OCPI registration ($target) failed"
	ocpi_token[$target]=$(printf '%s' "$token" | base64 -w0)
	for d in "${ocpi_depths[@]}"; do
		link=$("$OUT/bin/tool" ocpi-link "$base/ocpi/2.2.1/locations" "$token" $((d - 100)) 100) ||
			die "reading the OCPI Link at $d ($target) failed"
		[[ $link == "$base/ocpi/2.2.1/locations?"*"offset=$d&"*position=* ]] ||
			die "the OCPI Link at $d ($target) is not what was expected: $link"
		ocpi_url[$target.$d]=$link
	done
done
# ocpi_check TARGET URL DEPTH: the OCPI page at URL holds 100 locations, the first the
# one at DEPTH, and says X-Total-Count N.
ocpi_check() {
	local page total first n
	page=$(curl -fsS -D "$OUT/scale-ocpi-headers" -H "Authorization: Token ${ocpi_token[$1]}" "$2") || die "GET $2 ($1) failed"
	total=$(tr -d '\r' <"$OUT/scale-ocpi-headers" | awk -F': ' 'tolower($1) == "x-total-count" {print $2}')
	first=$(grep -o '"id":"LOC-[0-9]*"' <<<"$page" | awk -F'"' 'NR == 1 {print $4}')
	n=$(grep -o '"id":"LOC-' <<<"$page" | wc -l)
	[[ $first == "${ocpi_want[$3]}" && $n == 100 && $total == "$N" ]] ||
		die "the OCPI page at depth $3 ($1) starts with '$first', holds $n locations, X-Total-Count '$total'; want ${ocpi_want[$3]}, 100, $N"
}
for ((r = 1; r <= ROUNDS; r++)); do
	for d in $(in_order "$r" "${ocpi_depths[@]}"); do
		for target in full pg; do
			port=$PORT
			[[ $target == pg ]] && port=$PG_PORT
			first="http://127.0.0.1:$port/ocpi/2.2.1/locations?limit=100"
			url=${ocpi_url[$target.$d]}
			if ((r == 1)); then
				ocpi_check "$target" "$first" 0
				ocpi_check "$target" "$url" "$d"
			fi
			OCPI_TOKEN=${ocpi_token[$target]} pair "$r" "$d" "$target-ocpi" "$first" "$url" get-ocpi.lua
		done
	done
done
awk -F'\t' '$7 > 0 {exit 1}' "$RAW" || die "the service answered non-2xx under load (see $RAW and $OUT/serve*.log)"
RSS=$(peak_rss "$SQLITE_PID")
PG_RSS=$(peak_rss "$PG_PID")
"$OUT/bin/tool" scale-report "$RAW" "$RSS" "$IMPORT" "$SIZE" "$N" "$PG_IMPORT" "$PG_SIZE" "$PG_RSS" "$PG_VACUUM" | tee "$ROOT/bench/scale-results.md"
