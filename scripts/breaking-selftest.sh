#!/usr/bin/env bash
# Proves the breaking-change gate bites: removing an enum value from a copy of each
# released contract must make `oasdiff breaking` fail.
set -euo pipefail
released=${1:?usage: breaking-selftest.sh RELEASED_SPEC OCPI_RELEASED_SPEC}
ocpi_released=${2:?usage: breaking-selftest.sh RELEASED_SPEC OCPI_RELEASED_SPEC}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_breaking SPEC WHAT SED_SCRIPT applies the edit to a copy of SPEC and fails unless
# oasdiff reports the copy as a breaking change of SPEC.
expect_breaking() {
  local spec=$1 what=$2 script=$3 edited="$tmp/edited.yaml"
  sed "$script" "$spec" > "$edited"
  if cmp -s "$spec" "$edited"; then
    echo "breaking-selftest: the edit ($what) did not apply to $spec; update this script with the contract" >&2
    exit 1
  fi
  if oasdiff breaking --fail-on WARN "$spec" "$edited" > "$tmp/out.txt" 2>&1; then
    echo "breaking-selftest: $what was NOT reported as breaking in $spec" >&2
    cat "$tmp/out.txt" >&2
    exit 1
  fi
  echo "breaking-selftest: $what is caught in $spec:"
  sed -n '1,3p' "$tmp/out.txt"
}

# Drop GBT_DC from the ConnectorStandard enum (a request field of the PATCH of a connector).
expect_breaking "$released" "removing enum value GBT_DC" \
  's/enum: \[CHADEMO, IEC_62196_T2_COMBO, IEC_62196_T2, GBT_AC, GBT_DC, IEC_62196_T1_COMBO, IEC_62196_T1\]/enum: [CHADEMO, IEC_62196_T2_COMBO, IEC_62196_T2, GBT_AC, IEC_62196_T1_COMBO, IEC_62196_T1]/'

# Drop SCSP from the OCPI Role enum (roles[].role of the credentials a partner POSTs).
expect_breaking "$ocpi_released" "removing Role value SCSP" \
  's/enum: \[CPO, EMSP, HUB, NAP, NSP, OTHER, SCSP\]/enum: [CPO, EMSP, HUB, NAP, NSP, OTHER]/'
