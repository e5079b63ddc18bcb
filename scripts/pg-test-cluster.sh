#!/usr/bin/env bash
# pg-test-cluster.sh: a throw-away PostgreSQL cluster for the tests.
#
#   eval "$(scripts/pg-test-cluster.sh start)"   # prints the three export lines below
#   go test ./...
#   scripts/pg-test-cluster.sh stop "$CHARGENET_PG_DIR"
#
# start     finds PostgreSQL (version 15 if there, else the newest; as root it installs the
#           Debian package when none is there), creates a cluster in a new directory
#           (trust authentication, superuser postgres), starts it on a free port of
#           127.0.0.1 with its socket in that directory, creates database chargenet_test
#           and prints, on standard output and nothing else:
#             export CHARGENET_TEST_POSTGRES=postgres://postgres@127.0.0.1:PORT/chargenet_test?sslmode=disable
#             export CHARGENET_PG_DIR=DIR        (the data directory)
#             export CHARGENET_PG_BIN=BINDIR     (where pg_ctl is)
#           Every call makes a new cluster. CHARGENET_PG_BIN, if set, chooses the binaries.
# stop DIR  stops the cluster in DIR and removes DIR. A DIR that is already gone is no
#           error; a DIR this script did not create is refused.
#
# The server runs as user postgres when the script runs as root (PostgreSQL refuses
# root), as the calling user otherwise. Messages go to standard error.
set -euo pipefail

readonly marker=.chargenet-pg-test-cluster
readonly database=chargenet_test

die() {
	echo "pg-test-cluster: $*" >&2
	exit 1
}

# as_pg runs a command as the cluster's owner.
as_pg() {
	if [[ $(id -u) -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# find_bin prints the directory of pg_ctl and initdb, installing PostgreSQL if needed.
find_bin() {
	if [[ -n ${CHARGENET_PG_BIN:-} ]]; then
		[[ -x $CHARGENET_PG_BIN/pg_ctl && -x $CHARGENET_PG_BIN/initdb ]] ||
			die "CHARGENET_PG_BIN=$CHARGENET_PG_BIN has no pg_ctl and initdb"
		echo "$CHARGENET_PG_BIN"
		return
	fi
	local found
	found=$(pick_bin)
	if [[ -z $found ]]; then
		[[ $(id -u) -eq 0 ]] || die "no PostgreSQL in /usr/lib/postgresql/*/bin; install it (apt-get install -y postgresql) or set CHARGENET_PG_BIN"
		echo "pg-test-cluster: installing PostgreSQL (apt-get install -y postgresql)" >&2
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 ||
			die "apt-get update failed"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2 ||
			die "apt-get install postgresql failed"
		found=$(pick_bin)
		[[ -n $found ]] || die "PostgreSQL installed, but no /usr/lib/postgresql/*/bin/pg_ctl"
	fi
	echo "$found"
}

# pick_bin prints /usr/lib/postgresql/15/bin if usable, else the newest version's bin.
pick_bin() {
	local d
	if [[ -x /usr/lib/postgresql/15/bin/pg_ctl && -x /usr/lib/postgresql/15/bin/initdb ]]; then
		echo /usr/lib/postgresql/15/bin
		return
	fi
	for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -t/ -k4,4nr); do
		if [[ -x $d/pg_ctl && -x $d/initdb ]]; then
			echo "$d"
			return
		fi
	done
}

# free_port prints a TCP port of 127.0.0.1 that nothing listens on right now.
free_port() {
	local port
	for _ in $(seq 100); do
		port=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return
		fi
	done
	die "found no free port"
}

# emit prints an export line for eval, the value in single quotes.
emit() {
	local q="'\\''"
	printf "export %s='%s'\n" "$1" "${2//\'/$q}"
}

start() {
	local bin dir port started=""
	bin=$(find_bin)
	if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
		useradd --system --no-create-home --shell /usr/sbin/nologin postgres ||
			die "cannot create user postgres"
	fi
	dir=$(mktemp -d "${TMPDIR:-/tmp}/chargenet-pg.XXXXXX")
	# Remove the half-made cluster on any failure below.
	trap 'as_pg "$bin/pg_ctl" -D "$dir" -m immediate stop >/dev/null 2>&1 || true; rm -rf -- "$dir"' EXIT
	if [[ $(id -u) -eq 0 ]]; then
		chown postgres: "$dir"
	fi
	chmod 700 "$dir"

	# -N: no fsync during initdb (the cluster is thrown away); the server itself runs
	# with fsync=on so that tests see the durability settings of production.
	as_pg "$bin/initdb" -D "$dir" -U postgres --auth=trust -E UTF8 --locale=C -N --no-instructions >"$dir.initdb.log" 2>&1 || {
		cat "$dir.initdb.log" >&2
		rm -f -- "$dir.initdb.log"
		die "initdb failed"
	}
	rm -f -- "$dir.initdb.log"
	printf 'bin=%s\n' "$bin" | as_pg tee "$dir/$marker" >/dev/null

	# Another process may take the port between free_port and the server's bind: retry.
	for attempt in 1 2 3; do
		port=$(free_port)
		if as_pg "$bin/pg_ctl" -D "$dir" -l "$dir/server.log" -w -t 60 \
			-o "-p $port -c listen_addresses=127.0.0.1 -k $dir -c fsync=on -c max_connections=300" \
			start >&2; then
			started=1
			break
		fi
		echo "pg-test-cluster: start attempt $attempt on port $port failed:" >&2
		tail -n 5 "$dir/server.log" >&2 || true
	done
	[[ -n $started ]] || die "the server did not start; see the messages above"

	as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres "$database" >&2 ||
		die "createdb $database failed"
	printf 'port=%s\n' "$port" | as_pg tee -a "$dir/$marker" >/dev/null
	trap - EXIT

	emit CHARGENET_TEST_POSTGRES "postgres://postgres@127.0.0.1:$port/$database?sslmode=disable"
	emit CHARGENET_PG_DIR "$dir"
	emit CHARGENET_PG_BIN "$bin"
}

stop() {
	local dir=${1:-}
	[[ -n $dir ]] || die "usage: pg-test-cluster.sh stop DIR"
	if [[ ! -e $dir ]]; then
		return 0 # already stopped and removed
	fi
	[[ -f $dir/$marker ]] || die "$dir was not created by pg-test-cluster.sh; not touching it"
	local bin
	bin=$(sed -n 's/^bin=//p' "$dir/$marker")
	[[ -x $bin/pg_ctl ]] || bin=$(find_bin)
	if [[ -f $dir/postmaster.pid ]]; then
		# immediate: the data is thrown away, so skip the shutdown checkpoint.
		as_pg "$bin/pg_ctl" -D "$dir" -m immediate -w stop >&2 ||
			echo "pg-test-cluster: pg_ctl stop failed; removing $dir anyway" >&2
	fi
	rm -rf -- "$dir"
}

case ${1:-} in
start) start ;;
stop) stop "${2:-}" ;;
*) die "usage: pg-test-cluster.sh start | stop DIR" ;;
esac
