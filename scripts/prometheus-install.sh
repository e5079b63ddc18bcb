#!/usr/bin/env bash
# prometheus-install.sh: make sure the Prometheus server and promtool are on PATH for the
# tests (the Debian package prometheus brings both). As root it installs the package
# when either is missing (apt-get update first); otherwise it only says what is missing.
# Messages go to standard error; it exits 0 when both are there afterwards, 1 if not.
set -euo pipefail

if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "prometheus-install: prometheus or promtool is missing; install the Debian package prometheus (apt-get install -y prometheus)" >&2
	exit 1
fi
echo "prometheus-install: installing Prometheus (apt-get install -y prometheus)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends prometheus >&2
command -v prometheus >/dev/null && command -v promtool >/dev/null
