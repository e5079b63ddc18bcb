#!/usr/bin/env bash
# The breaking-change gate: fails when the contract CURRENT breaks RELEASED for a client
# generated from RELEASED. Two checks, both run:
#   - oasdiff's breaking-change rules, with openapi/oasdiff-levels.txt raising to errors
#     the enum rules it reports as INFO (an enum dropped in a request, a value removed
#     from an answer's enum);
#   - scripts/enum-check.go: every enum anywhere in the document, the webhook payloads
#     (callbacks) included, which oasdiff does not compare.
# ACCEPTED, when given and present, lists findings accepted as history for both.
#
#   scripts/breaking.sh RELEASED CURRENT [ACCEPTED]
set -euo pipefail
released=${1:?usage: breaking.sh RELEASED CURRENT [ACCEPTED]}
current=${2:?usage: breaking.sh RELEASED CURRENT [ACCEPTED]}
accepted=${3:-}
released=$(realpath "$released") current=$(realpath "$current")
[[ -z $accepted ]] || accepted=$(realpath -m "$accepted")
root=$(cd "$(dirname "$0")/.." && pwd)
export PATH="$root/.tools/bin:$PATH" # where make installs the pinned oasdiff
args=(--fail-on WARN --severity-levels "$root/openapi/oasdiff-levels.txt")
if [[ -n $accepted && -f $accepted ]]; then
	args+=(--err-ignore "$accepted")
else
	accepted=""
fi
status=0
oasdiff breaking "${args[@]}" "$released" "$current" || status=1
(cd "$root" && go run scripts/enum-check.go "$released" "$current" ${accepted:+"$accepted"}) || status=1
exit $status
