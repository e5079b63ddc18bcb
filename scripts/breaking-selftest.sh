#!/usr/bin/env bash
# Proves the breaking-change gate (scripts/breaking.sh) bites: each edit below, made to a
# copy of a contract, must make the gate fail against the contract it was made to.
#
#   scripts/breaking-selftest.sh RELEASED_SPEC OCPI_RELEASED_SPEC
set -euo pipefail
released=${1:?usage: breaking-selftest.sh RELEASED_SPEC OCPI_RELEASED_SPEC}
ocpi_released=${2:?usage: breaking-selftest.sh RELEASED_SPEC OCPI_RELEASED_SPEC}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_breaking SPEC WHAT PERL_SCRIPT applies the edit to a copy of SPEC and fails
# unless the gate reports the copy as a breaking change of SPEC.
expect_breaking() {
  local spec=$1 what=$2 script=$3 edited="$tmp/edited.yaml"
  perl -0pe "$script" "$spec" > "$edited"
  if cmp -s "$spec" "$edited"; then
    echo "breaking-selftest: the edit ($what) did not apply to $spec; update this script with the contract" >&2
    exit 1
  fi
  if scripts/breaking.sh "$spec" "$edited" > "$tmp/out.txt" 2>&1; then
    echo "breaking-selftest: $what was NOT reported as breaking in $spec" >&2
    cat "$tmp/out.txt" >&2
    exit 1
  fi
  echo "breaking-selftest: $what is caught in $spec:"
  grep -E '^(error|warning)|^enum-check: [^0-9]' "$tmp/out.txt" | sed -n '1,3p' | cut -c1-160 | sed 's/^/    /'
}

# Drop GBT_DC from the ConnectorStandard enum (a request field of the PATCH of a connector).
expect_breaking "$released" "removing enum value GBT_DC" \
  's/enum: \[CHADEMO, IEC_62196_T2_COMBO, IEC_62196_T2, GBT_AC, GBT_DC, IEC_62196_T1_COMBO, IEC_62196_T1\]/enum: [CHADEMO, IEC_62196_T2_COMBO, IEC_62196_T2, GBT_AC, IEC_62196_T1_COMBO, IEC_62196_T1]/'

# The change 2.14.0 made: StatusChangedData.source (an answer of the event log) from an
# enum into a string with x-extensible-enum. Made to 2.13.0, whatever the baseline is.
expect_breaking openapi/released/2.13.0.yaml "source turned from enum into x-extensible-enum (2.13.0 -> 2.14.0)" \
  's/(\n        source:\n          type: string\n          )enum: \[chargebox, operator\]/$1x-extensible-enum: [chargebox, operator, connection]/'

# Drop the enum of OcppStatus (the status of a notification: a request only).
expect_breaking "$released" "dropping the enum of a request field (OcppStatus)" \
  's/(\n    OcppStatus:\n      type: string\n      description: [^\n]*\n)      enum: [^\n]*\n/$1/'

# Turn PowerType (requests and answers) from a string enum into an integer one.
expect_breaking "$released" "turning an enum into another type (PowerType as integers)" \
  's/(\n    PowerType:\n      type: )string(\n(?:      [^\n]*\n)*?      enum: )\[AC_1_PHASE, AC_2_PHASE, AC_2_PHASE_SPLIT, AC_3_PHASE, DC\]/${1}integer${2}[1, 2, 3, 4, 5]/'

# Remove a value from an answer's enum: the outcome of a delivery attempt.
expect_breaking "$released" "removing a value from an answer's enum (outcome expired)" \
  's/enum: \[succeeded, failed, gone, expired\]/enum: [succeeded, failed, gone]/'

# Drop the enum of a webhook payload only (chargebox.disconnected's reason, a callback).
expect_breaking openapi/openapi.yaml "dropping an enum of a webhook payload (ChargeboxEventData.reason)" \
  's/(\n        reason:\n          type: string\n          )enum: \[closed, offline, revoked\]/$1x-extensible-enum: [closed, offline, revoked]/'

# Drop SCSP from the OCPI Role enum (roles[].role of the credentials a partner POSTs).
expect_breaking "$ocpi_released" "removing Role value SCSP" \
  's/enum: \[CPO, EMSP, HUB, NAP, NSP, OTHER, SCSP\]/enum: [CPO, EMSP, HUB, NAP, NSP, OTHER]/'
