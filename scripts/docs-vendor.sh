#!/usr/bin/env bash
# Vendors the Swagger UI files that /docs serves into docs/assets/, from the npm registry
# package swagger-ui-dist, and records their checksums in docs/assets/SHA256SUMS.
#
#   scripts/docs-vendor.sh            # re-vendor the pinned version (no change expected)
#   scripts/docs-vendor.sh 5.36.0     # upgrade: then update docs/assets/README.md and run
#                                     # scripts/docs-check.sh
#   scripts/docs-vendor.sh --verify   # check docs/assets/ against SHA256SUMS (offline)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ASSETS=$ROOT/docs/assets
PINNED=5.35.0
# Upstream files copied byte for byte; init.js, docs.css, README.md are ours.
FILES=(swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css LICENSE NOTICE favicon-32x32.png)

if [[ ${1:-} == --verify ]]; then
	(cd "$ASSETS" && sha256sum --quiet -c SHA256SUMS) || {
		echo "docs-vendor: docs/assets/ differs from SHA256SUMS: re-run scripts/docs-vendor.sh" >&2
		exit 1
	}
	echo "docs-vendor: docs/assets/ matches SHA256SUMS (swagger-ui-dist files unmodified)"
	exit 0
fi

version=${1:-$PINNED}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && timeout 300 npm pack --silent "swagger-ui-dist@$version" >/dev/null)
tar -xzf "$tmp"/swagger-ui-dist-"$version".tgz -C "$tmp"
got=$(node -p 'require(process.argv[1]).version' "$tmp/package/package.json")
[[ $got == "$version" ]] || {
	echo "docs-vendor: npm gave swagger-ui-dist $got, wanted $version" >&2
	exit 1
}
for f in "${FILES[@]}"; do
	cp "$tmp/package/$f" "$ASSETS/$f"
done
(cd "$ASSETS" && sha256sum "${FILES[@]}" >SHA256SUMS)
echo "docs-vendor: vendored swagger-ui-dist $version into docs/assets/:"
cat "$ASSETS/SHA256SUMS"
if [[ $version != "$PINNED" ]]; then
	echo "docs-vendor: now set PINNED=$version in this script and the version in docs/assets/README.md and docs/docs.go" >&2
fi
