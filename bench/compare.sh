#!/usr/bin/env bash
# make bench-compare: rows of make bench for two trees of this repository, servers side
# by side on copies of the same demo inventory, rounds interleaved (the order of the two
# alternates every round), on SQLite and, with PG=1, on PostgreSQL (a throw-away
# cluster, one database per tree). Prints each round and the medians with the ratio
# new/old, and writes them to bench/out/compare.md. The rows:
#
#   evse, locations        GET /v2/evses/1002, GET /v1/locations?limit=25
#   evse_w, locations_w    the same reads while bench/tool writer sends WRITE_RATE writes/s
#                          (PATCHes and status notifications) to the same server; the
#                          writer's p99 is reported beside them
#   patch, patch_spread    PATCH of one connector; of connector 1 of the 40 demo EVSEs
#   status                 status notifications of the 20 demo charge boxes
#
#   OLD=c0ae642 NEW=. ROUNDS=5 DURATION=5s CONNS=32 ROWS="patch patch_spread status" PG=1 bench/compare.sh
#
# CEILING=1 adds bench/ceiling, the bare Echo server answering the new tree's bytes,
# beside the evse and locations rows on SQLite (in each round before the trees in odd
# rounds, after them in even ones), and a table of each tree's rate against it.
#
# SERVE_ARGS adds flags to both servers (for example --read-cache-mb 0). STORES=pg (with
# PG=1) measures only PostgreSQL.
#
# OLD and NEW are commits (built from `git archive`) or "." for the working tree.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
OLD=${OLD:-c0ae642}
NEW=${NEW:-.}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-5s}
CONNS=${CONNS:-32}
ROWS=${ROWS:-evse locations evse_w locations_w patch patch_spread status}
PG=${PG:-0}
ONLY=${STORES:-}
WRITE_RATE=${WRITE_RATE:-1000}
SERVE_ARGS=${SERVE_ARGS:-}
CEILING=${CEILING:-0}
need_wrk

# tree_bin REV NAME: builds ./cmd/chargenet of REV into $OUT/bin/chargenet-NAME.
tree_bin() {
	local src=$ROOT tmp=""
	if [[ $1 != . ]]; then
		tmp=$(mktemp -d)
		git -C "$ROOT" archive "$1" | tar -x -C "$tmp" || die "git archive $1 failed"
		src=$tmp
	fi
	(cd "$src" && go build -o "$OUT/bin/chargenet-$2" ./cmd/chargenet) || die "building $1 failed"
	[[ -n $tmp ]] && rm -rf "$tmp"
	return 0
}
say "building the old tree ($OLD) and the new one ($NEW)"
tree_bin "$OLD" old
tree_bin "$NEW" new
(cd "$ROOT" && go build -o "$OUT/bin/tool" ./bench/tool) || die "building bench/tool failed"
[[ $CEILING == 1 ]] && { (cd "$ROOT" && go build -o "$OUT/bin/ceiling" ./bench/ceiling) || die "building bench/ceiling failed"; }

declare -A URL PID INGEST
# start TREE STORE DATABASE: the tree's server on DATABASE with the demo inventory (each
# tree makes its own, at its own schema) and an ingest key.
start() {
	local bin=$OUT/bin/chargenet-$1 port
	port=$(free_port)
	# shellcheck disable=SC2086
	CHARGENET_BIN=$bin SERVE_LOG=$OUT/compare-$1-$2.log serve_url "$3" "$port" --demo --webhook-dispatch=false $SERVE_ARGS
	URL[$1-$2]=http://127.0.0.1:$port
	PID[$1-$2]=$SERVE_PID
	INGEST[$1-$2]=$("$bin" apikey create --database "$3" --name bench-ingest --scope ingest 2>/dev/null) || die "creating an ingest key failed"
}
for tree in old new; do
	rm -f "$OUT/compare-$tree.db"*
	start "$tree" sqlite "sqlite:$OUT/compare-$tree.db"
done
STORES=sqlite
if [[ $PG == 1 ]]; then
	PGENV=$("$ROOT/scripts/pg-test-cluster.sh" start) || die "starting a PostgreSQL cluster failed"
	eval "$PGENV"
	PG_DIR=$CHARGENET_PG_DIR
	ON_EXIT+=("\"$ROOT/scripts/pg-test-cluster.sh\" stop '$CHARGENET_PG_DIR'")
	for tree in old new; do
		"$CHARGENET_PG_BIN/createdb" -h 127.0.0.1 -p "$(sed -E 's|.*:([0-9]+)/.*|\1|' <<<"$CHARGENET_TEST_POSTGRES")" -U postgres "compare_$tree" ||
			die "createdb failed"
		start "$tree" pg "$(sed -E "s|/[^/?]+([?].*)?\$|/compare_$tree\1|" <<<"$CHARGENET_TEST_POSTGRES")"
	done
	STORES="sqlite pg"
fi
[[ -n $ONLY ]] && STORES=$ONLY
CEIL=""
if [[ $CEILING == 1 ]]; then
	CAP=$OUT/compare-captured
	mkdir -p "$CAP"
	for f in event_types:/emsp/v1/webhooks/event_types locations:/v1/locations?limit=25 locations_deep:/v1/locations?limit=25 evse:/v2/evses/1002; do
		curl -fsS -H "Authorization: Bearer $BENCH_KEY" "${URL[new-sqlite]}${f#*:}" -o "$CAP/${f%%:*}.json" || die "GET ${f#*:} failed"
	done
	port=$(free_port)
	"$OUT/bin/ceiling" "127.0.0.1:$port" "$CAP" &
	PIDS+=($!)
	CEIL=http://127.0.0.1:$port
	wait_http "$CEIL/v2/evses/1" 20
fi

declare -A PATHS=([evse]=/v2/evses/1002 [locations]=/v1/locations?limit=25 [evse_w]=/v2/evses/1002
	[locations_w]=/v1/locations?limit=25 [patch]=/v2/evses/1002/connectors/1
	[patch_spread]=/v2/evses/1002/connectors/1 [status]=/internal/v1/chargeboxes/501/status-notifications)
declare -A SCRIPTS=([evse]=get.lua [locations]=get.lua [evse_w]=get.lua [locations_w]=get.lua [patch]=patch.lua
	[patch_spread]=patch-spread.lua [status]=status.lua)
RAW=$OUT/compare.tsv
WRITES=$OUT/compare-writes.tsv
: >"$RAW"
: >"$WRITES"

# run ROW STORE TREE ROUND: one wrk run of ROW against TREE's server on STORE; for a
# row ending in _w, with the writer sending to the same server meanwhile, its figures
# appended to $WRITES (row, tree, round, writes, rate, non-2xx, failed, p50, p99).
run() {
	local url=${URL[$3-$2]} wout wp
	if [[ $1 != *_w ]]; then
		BENCH_INGEST_KEY=${INGEST[$3-$2]} CPU_PIDS=${PID[$3-$2]} CPU_PG=$([[ $2 == pg ]] && echo 1) \
			wrk_run "$1-$2" "$3" "$4" "$url${PATHS[$1]}" "${SCRIPTS[$1]}" "$CONNS" "$DURATION"
		return
	fi
	wout=$(mktemp)
	"$OUT/bin/tool" writer "$url" "$BENCH_KEY" "${INGEST[$3-$2]}" "$WRITE_RATE" "$(awk -v d="${DURATION%s}" 'BEGIN {print d + 1}')s" writes >"$wout" &
	wp=$!
	sleep 0.5
	CPU_PIDS=${PID[$3-$2]} CPU_PG=$([[ $2 == pg ]] && echo 1) \
		wrk_run "$1-$2" "$3" "$4" "$url${PATHS[$1]}" "${SCRIPTS[$1]}" "$CONNS" "$DURATION"
	wait "$wp" || die "the writer failed"
	printf '%s\t%s\t%s\t%s\n' "$1-$2" "$3" "$4" "$(cat "$wout")" >>"$WRITES"
	rm -f "$wout"
}
say "wrk: $ROUNDS rounds x $DURATION per row, store and tree, $CONNS connections"
for ((r = 1; r <= ROUNDS; r++)); do
	order="old new"
	((r % 2 == 0)) && order="new old"
	for row in $ROWS; do
		for store in $STORES; do
			targets=$order
			if [[ -n $CEIL && $store == sqlite && ($row == evse || $row == locations) ]]; then
				targets="ceiling $order"
				((r % 2 == 0)) && targets="$order ceiling"
			fi
			for tree in $targets; do
				if [[ $tree == ceiling ]]; then
					wrk_run "$row-sqlite" ceiling "$r" "$CEIL${PATHS[$row]}" "${SCRIPTS[$row]}" "$CONNS" "$DURATION"
				else
					run "$row" "$store" "$tree" "$r"
				fi
			done
		done
	done
done
awk -F'\t' '$7 > 0 {bad = 1} END {exit bad}' "$RAW" || die "non-2xx answers under load (see $RAW and $OUT/compare-*.log)"
awk -F'\t' '$6 > 0 || $7 > 0 {bad = 1} END {exit bad}' "$WRITES" || die "the writer got non-2xx answers or failures (see $WRITES)"

{
	printf '# make bench rows of two trees, interleaved\n\n'
	printf 'old: %s, new: %s (HEAD %s); %s rounds x %s, %s connections; %s, %s cores.\n\n' \
		"$OLD" "$NEW" "$(git -C "$ROOT" rev-parse --short HEAD)" "$ROUNDS" "$DURATION" "$CONNS" "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(nproc)"
	printf '| row | old req/s (median) | new req/s (median) | new/old of the medians | new/old per round | median of the rounds | p99 ms old → new | CPU µs/req old → new (server + PostgreSQL) |\n|---|---|---|---|---|---|---|---|\n'
	for row in $ROWS; do
		for store in $STORES; do
			awk -F'\t' -v e="$row-$store" '
				function median(a, n,   i, j, t) {
					for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
					return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
				}
				$1 == e && $2 == "old" { o[++no] = $4; o99[no] = $6; oc[no] = $8; op[no] = $9; ro[$3] = $4 }
				$1 == e && $2 == "new" { n[++nn] = $4; n99[nn] = $6; nc[nn] = $8; np[nn] = $9; rn[$3] = $4 }
				END {
					per = ""
					for (r = 1; r in ro; r++) { ratio[r] = rn[r] / ro[r]; per = per sprintf("%s%.2f", (r > 1 ? " " : ""), ratio[r]) }
					mo = median(o, no); mn = median(n, nn)
					printf "| %s | %.0f | %.0f | %.2f | %s | %.2f | %.2f → %.2f | %.0f + %.0f → %.0f + %.0f |\n", e, mo, mn, mn / mo, per, median(ratio, r - 1),
						median(o99, no), median(n99, nn), median(oc, no), median(op, no), median(nc, nn), median(np, nn)
				}' "$RAW"
		done
	done
	if [[ -n $CEIL ]]; then
		printf '\nAgainst the ceiling (bench/ceiling answering the new tree'"'"'s bytes; each tree'"'"'s req/s over the ceiling'"'"'s in the same round):\n\n| row | old / ceiling per round | median | new / ceiling per round | median |\n|---|---|---|---|---|\n'
		for row in evse locations; do
			awk -F'\t' -v e="$row-sqlite" '
				function median(a, n,   i, j, t) {
					for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
					return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
				}
				$1 == e { rps[$2, $3] = $4; if ($3 > rounds) rounds = $3 }
				END {
					if (!(("ceiling", 1) in rps)) exit
					for (r = 1; r <= rounds; r++) {
						o[r] = rps["old", r] / rps["ceiling", r]; n[r] = rps["new", r] / rps["ceiling", r]
						po = po sprintf("%s%.3f", (r > 1 ? " " : ""), o[r]); pn = pn sprintf("%s%.3f", (r > 1 ? " " : ""), n[r])
					}
					printf "| %s | %s | %.3f | %s | %.3f |\n", e, po, median(o, rounds), pn, median(n, rounds)
				}' "$RAW"
		done
	fi
	if [[ -s $WRITES ]]; then
		printf '\nThe writer beside the _w rows (%s writes/s asked):\n\n| row | old writes/s | new writes/s | old write p99 ms | new write p99 ms |\n|---|---|---|---|---|\n' "$WRITE_RATE"
		awk -F'\t' '
			function median(a, n,   i, j, t) {
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			{ k = $1 SUBSEP $2; c[k]++; rate[k, c[k]] = $5; p99[k, c[k]] = $9; rows[$1] = 1 }
			END {
				for (row in rows) {
					for (t = 0; t < 2; t++) {
						tree = t ? "new" : "old"; k = row SUBSEP tree; n = c[k]
						delete a; delete b
						for (i = 1; i <= n; i++) { a[i] = rate[k, i]; b[i] = p99[k, i] }
						r[t] = median(a, n); q[t] = median(b, n)
					}
					printf "| %s | %.0f | %.0f | %.2f | %.2f |\n", row, r[0], r[1], q[0], q[1]
				}
			}' "$WRITES"
	fi
} | tee "$OUT/compare.md"
