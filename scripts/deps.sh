#!/usr/bin/env bash
# Lists what has a newer release than the project uses: the direct Go modules of go.mod
# (the generator pinned by tools.go among them), the Go tools the Makefile pins, and the
# npm packages of tools/ and examples/typescript. It changes nothing.
#
# A module whose version list the proxy refuses is named with the reason instead of
# failing the run; ask for an exact version of it (go list -m MODULE@vX.Y.Z).
#
#   scripts/deps.sh MAKEFILE_VAR=MODULE ...   # e.g. GOLANGCI_VERSION=github.com/golangci/golangci-lint/v2
set -uo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

# held names what stays behind on purpose, with the reason; it is listed, not counted.
declare -A held=(
	[typescript]="openapi-typescript 7 needs TypeScript 5"
	[@types/node]="the types of the Node this machine has (20)"
)
newer=0
note() { printf '%-58s %-14s -> %s\n' "$1" "$2" "$3"; }

echo "Go modules (direct, go.mod):"
mapfile -t direct < <($GO list -m -f '{{if not .Indirect}}{{if not .Main}}{{.Path}}{{end}}{{end}}' all)
while read -r path version update err; do
	if [[ $err != - ]]; then
		note "$path" "$version" "unknown: the proxy refused its version list"
	elif [[ $update != - ]]; then
		note "$path" "$version" "$update"
		newer=$((newer + 1))
	fi
done < <($GO list -m -u -e -f '{{.Path}} {{.Version}} {{with .Update}}{{.Version}}{{else}}-{{end}} {{if .Error}}refused{{else}}-{{end}}' "${direct[@]}" 2>/dev/null)

echo "Go tools (Makefile):"
for spec in "$@"; do
	var=${spec%%=*} module=${spec#*=}
	pinned=$(sed -n "s/^$var := //p" Makefile)
	latest=$($GO list -m -versions "$module" 2>/dev/null | awk '{print $NF}')
	if [[ -z $latest || $latest == "$module" ]]; then
		note "$module" "$pinned" "unknown: the proxy refused its version list"
	elif [[ $latest != "$pinned" ]]; then
		note "$module" "$pinned" "$latest"
		newer=$((newer + 1))
	fi
done

for dir in tools examples/typescript; do
	echo "npm ($dir/package.json):"
	while read -r name pinned; do
		latest=$(npm view "$name" version 2>/dev/null)
		if [[ -z $latest ]]; then
			note "$name" "$pinned" "unknown: the registry did not answer"
		elif [[ $latest != "$pinned" && -n ${held[$name]:-} ]]; then
			note "$name" "$pinned" "$latest (held: ${held[$name]})"
		elif [[ $latest != "$pinned" ]]; then
			note "$name" "$pinned" "$latest"
			newer=$((newer + 1))
		fi
	done < <(node -e 'const p = require(process.argv[1]);
		for (const [n, v] of Object.entries({...p.dependencies, ...p.devDependencies})) console.log(n, v)' "$PWD/$dir/package.json")
done

echo "deps: $newer with a newer release"
