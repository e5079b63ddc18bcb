# shellcheck shell=bash
# Helpers of the bench scripts (bench/run.sh, bench/ocpi.sh, ...). Source it.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=$ROOT/bench/out
mkdir -p "$OUT/bin"
PIDS=()
ON_EXIT=() # commands cleanup runs after killing PIDS
export BENCH_KEY=bench-key-0123456789abcdef
SECRET=bench-cursor-secret-0123456789abcdef0123

say() { printf 'bench: %s\n' "$*" >&2; }
die() {
	printf 'bench: FAIL: %s\n' "$*" >&2
	exit 1
}
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	for p in "${ON_EXIT[@]}"; do eval "$p" || true; done
}
trap cleanup EXIT

need_wrk() {
	command -v wrk >/dev/null && return
	[[ $(id -u) == 0 ]] || die "wrk is not installed and installing it needs root: apt-get install -y wrk"
	say "installing wrk (apt-get)"
	DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null ||
		die "apt-get install wrk failed"
}

build() {
	say "building chargenet and the benchmark tools"
	(cd "$ROOT" && go build -o "$OUT/bin/chargenet" ./cmd/chargenet && go build -o "$OUT/bin/ceiling" ./bench/ceiling &&
		go build -o "$OUT/bin/tool" ./bench/tool)
}

free_port() {
	# The kernel picks a free port for a listening socket; Go prints it.
	(cd "$ROOT" && go run ./bench/tool port)
}

wait_http() { # URL SECONDS
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	die "$1 did not answer within $2 s"
}

# serve DB PORT [ARGS...]: start chargenet serve on sqlite DB; sets SERVE_PID.
serve() {
	local db=$1
	shift
	serve_url "sqlite:$db" "$@"
}

# serve_url DATABASE PORT [ARGS...]: start chargenet serve (the binary of CHARGENET_BIN,
# default the one build made) on --database DATABASE; sets SERVE_PID.
serve_url() {
	local db=$1 port=$2
	shift 2
	CHARGENET_API_KEYS=$BENCH_KEY "${CHARGENET_BIN:-$OUT/bin/chargenet}" serve --database "$db" --addr "127.0.0.1:$port" \
		--cursor-secret "$SECRET" --rate-limit 0 "$@" >"${SERVE_LOG:-$OUT/serve.log}" 2>&1 &
	SERVE_PID=$!
	PIDS+=("$SERVE_PID")
	wait_http "http://127.0.0.1:$port/readyz" 60
}

# peak_rss PID: the process's peak resident set size in MB.
peak_rss() { awk '/VmHWM/ {printf "%.0f", $2/1024}' "/proc/$1/status"; }

# wrk_run NAME TARGET ROUND URL SCRIPT CONNS DURATION: one wrk run, appended to $RAW as
# endpoint, target, round, req/s, p50 ms, p99 ms, non-2xx responses.
#
# With CPU_PIDS set (the server's pid; CPU_PG=1 adds the PostgreSQL cluster's processes,
# PG_DIR its data directory), two more columns: the CPU time the server and PostgreSQL
# spent per request during the run, in µs.
wrk_run() {
	local out s0 p0 n
	s0=$(cpu_ticks ${CPU_PIDS:-}) p0=$(pg_ticks)
	out=$(wrk -t2 -c"$6" -d"$7" --latency -s "$ROOT/bench/wrk/$5" "$4" 2>&1) || die "wrk failed: $out"
	local figures
	figures=$(wrk_figures <<<"$out")
	if [[ -n ${CPU_PIDS:-} ]]; then
		n=$(awk '/requests in/ {print $1; exit}' <<<"$out")
		figures+=$(awk -v n="$n" -v s=$(($(cpu_ticks $CPU_PIDS) - s0)) -v p=$(($(pg_ticks) - p0)) -v hz="$(getconf CLK_TCK)" \
			'BEGIN {printf "\t%.1f\t%.1f", s * 1e6 / hz / n, p * 1e6 / hz / n}')
	fi
	wrk_record "$1" "$2" "$3" "$figures"
}

# cpu_ticks PID...: the CPU time (user and system, of the processes and their waited-for
# children) the processes have used, in clock ticks.
cpu_ticks() {
	local t=0 p
	for p in "$@"; do
		[[ -r /proc/$p/stat ]] && t=$((t + $(awk '{print $14 + $15 + $16 + $17}' "/proc/$p/stat")))
	done
	echo "$t"
}

# pg_ticks: cpu_ticks of the PostgreSQL cluster in PG_DIR (postmaster and backends) when
# CPU_PG is 1, else 0.
pg_ticks() {
	if [[ ${CPU_PG:-} != 1 || ! -r ${PG_DIR:-}/postmaster.pid ]]; then
		echo 0
		return
	fi
	local pm
	pm=$(head -1 "$PG_DIR/postmaster.pid")
	# shellcheck disable=SC2046
	cpu_ticks "$pm" $(pgrep -P "$pm")
}

# wrk_figures: wrk's output on stdin as req/s, p50 ms, p99 ms, non-2xx (tab-separated).
wrk_figures() {
	local out rps p50 p99 bad
	out=$(cat)
	rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
	p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
	p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
	bad=$(awk '/Non-2xx or 3xx responses:/ {print $5}' <<<"$out")
	printf '%s\t%s\t%s\t%s\n' "$rps" "$(ms "$p50")" "$(ms "$p99")" "${bad:-0}"
}

# wrk_record NAME TARGET ROUND FIGURES: appends one line to $RAW and prints it.
wrk_record() {
	local rps p50 p99 bad scpu pcpu
	IFS=$'\t' read -r rps p50 p99 bad scpu pcpu <<<"$4"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$rps" "$p50" "$p99" "$bad" "${scpu:-0}" "${pcpu:-0}" >>"$RAW"
	printf '  %-16s %-10s round %s: %10s req/s  p50 %8s ms  p99 %8s ms  non-2xx %s  cpu µs/req %s + %s\n' \
		"$1" "$2" "$3" "$rps" "$p50" "$p99" "$bad" "${scpu:--}" "${pcpu:--}" >&2
}

# ms VALUE: wrk's latency (123.45us, 1.20ms, 2.00s) in milliseconds.
ms() {
	awk -v v="$1" 'BEGIN {
		if (v ~ /us$/) { sub(/us$/, "", v); printf "%.3f", v / 1000 }
		else if (v ~ /ms$/) { sub(/ms$/, "", v); printf "%.3f", v }
		else if (v ~ /s$/) { sub(/s$/, "", v); printf "%.3f", v * 1000 }
		else printf "%s", v }'
}

# wrk_mixed NAME TARGET ROUND BASE PATH SCRIPT STORE [KIND]: the reads of wrk_run while
# the writer sends WRITE_RATE writes/s (PATCHes and status notifications, with the ingest
# key INGEST[STORE]; KIND reads: as many GETs of EVSEs instead) to the same server; the
# writer's figures go to $WRITES. Around it, the same reads alone, as target TARGET_ro:
# half of it right before and half right after (each half DURATION / 2, rounded up),
# recorded as one run with their mean, so that each round gives a ratio of neighbouring
# runs in which a steady drift of the machine's speed cancels. wrk runs with CONNS
# connections for DURATION.
wrk_mixed() {
	local wout half before after n rate bad failed p50 p99
	half=$(awk -v d="${DURATION%s}" 'BEGIN {h = int(d / 2); if (h * 2 < d) h++; print h}')s
	before=$(mktemp) after=$(mktemp)
	RAW=$before wrk_run "$1" "$2_ro" "$3" "$4$5" "$6" "$CONNS" "$half"
	wout=$(mktemp)
	"$OUT/bin/tool" writer "$4" "$BENCH_KEY" "${INGEST[$7]}" "$WRITE_RATE" "$(awk -v d="${DURATION%s}" 'BEGIN {print d + 1}')s" "${8:-writes}" >"$wout" &
	local wp=$!
	sleep 0.5
	wrk_run "$1" "$2" "$3" "$4$5" "$6" "$CONNS" "$DURATION"
	wait "$wp" || die "the writer failed"
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(cat "$wout")" >>"$WRITES"
	IFS=$'\t' read -r n rate bad failed p50 p99 <"$wout"
	printf '  %-16s %-10s round %s: writer %s writes, %s/s, non-2xx %s, failed %s, p50 %s ms, p99 %s ms\n' "$1" "$2" "$3" "$n" "$rate" "$bad" "$failed" "$p50" "$p99" >&2
	rm -f "$wout"
	RAW=$after wrk_run "$1" "$2_ro" "$3" "$4$5" "$6" "$CONNS" "$half"
	# Mean req/s, p50 and CPU per request of the two halves, the higher p99, the non-2xx of both.
	wrk_record "$1" "$2_ro" "$3" "$(paste "$before" "$after" | awk -F'\t' '{
		p99 = $6 > $15 ? $6 : $15
		printf "%.2f\t%.3f\t%.3f\t%d\t%.1f\t%.1f", ($4 + $13) / 2, ($5 + $14) / 2, p99, $7 + $16, ($8 + $17) / 2, ($9 + $18) / 2 }')"
	rm -f "$before" "$after"
}

# ocpi_evses_path BASE TOKEN FROM: the path of the OCPI page of 100 with EVSEs, the last
# page of 100 of the Locations changed from FROM (date_from), the demo locations' one
# second of last_updated (they list in id order within it). Each change moves its
# location after the others, so that the first page from FROM would lose the 20 with
# EVSEs to the end of the list at the first write: a PATCH of each of the 40 demo EVSEs
# (1001 to 1040) moves them there first, and the last page holds them, after 80 without,
# before writes and under them alike. TOKEN is Base64, as the Authorization header
# carries it.
ocpi_evses_path() {
	local uid total
	for ((uid = 1001; uid <= 1040; uid++)); do
		curl -fsS -o /dev/null -X PATCH -H "Authorization: Bearer $BENCH_KEY" -H 'Content-Type: application/json' \
			-d '{"maxElectricPower": 11.5}' "$1/v2/evses/$uid/connectors/1" || die "PATCH of EVSE $uid failed"
	done
	total=$(curl -fsS -o /dev/null -D - -H "Authorization: Token $2" "$1/ocpi/2.2.1/locations?limit=1&date_from=$3" |
		awk 'tolower($1) == "x-total-count:" {print $2 + 0}') || die "reading X-Total-Count from $3 failed"
	((total >= 100)) || die "only ${total:-no} locations changed from $3: want 100 or more"
	echo "/ocpi/2.2.1/locations?limit=100&date_from=$3&offset=$((total - 100))"
}

# ocpi_evses_check BASE TOKEN PATH: dies unless the OCPI page at PATH holds the 40 demo
# EVSEs.
ocpi_evses_check() {
	local n
	n=$(curl -fsS -H "Authorization: Token $2" "$1$3" | awk '{n += gsub(/"evse_id":/, "")} END {print n + 0}') ||
		die "GET $3 failed"
	((n == 40)) || die "the OCPI page $3 holds $n EVSEs, not the 40 demo EVSEs"
}
