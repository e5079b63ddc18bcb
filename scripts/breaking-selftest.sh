#!/usr/bin/env bash
# Proves the breaking-change gate bites: removing an enum value from a copy of the
# released contract must make `oasdiff breaking` fail.
set -euo pipefail
released=${1:?usage: breaking-selftest.sh RELEASED_SPEC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Drop GBT_DC from the ConnectorStandard enum.
sed 's/enum: \[CHADEMO, IEC_62196_T2_COMBO, IEC_62196_T2, GBT_AC, GBT_DC, IEC_62196_T1_COMBO, IEC_62196_T1\]/enum: [CHADEMO, IEC_62196_T2_COMBO, IEC_62196_T2, GBT_AC, IEC_62196_T1_COMBO, IEC_62196_T1]/' \
  "$released" > "$tmp/edited.yaml"
if cmp -s "$released" "$tmp/edited.yaml"; then
  echo "breaking-selftest: the edit did not apply; update this script with the contract" >&2
  exit 1
fi
if oasdiff breaking --fail-on WARN "$released" "$tmp/edited.yaml" > "$tmp/out.txt" 2>&1; then
  echo "breaking-selftest: removing enum value GBT_DC was NOT reported as breaking" >&2
  cat "$tmp/out.txt" >&2
  exit 1
fi
echo "breaking-selftest: removing enum value GBT_DC is caught:"
sed -n '1,3p' "$tmp/out.txt"
