#!/usr/bin/env bash
# Partner proof in TypeScript: generate types from openapi/openapi.yaml with
# openapi-typescript, type-check examples/typescript/src/partner.ts with `tsc --strict`
# (a contract change that breaks a partner's code fails here), then run it with tsx
# against `chargenet serve --demo` on a free port over a throw-away SQLite database.
# Exits with the partner script's status.
#
#   scripts/ts-partner.sh            # from anywhere; needs go, node 20+, npm, curl
#   KEEP_WORK=1 scripts/ts-partner.sh  # keep the temp dir (binary, database, server log)
set -euo pipefail

# shellcheck source=scripts/lib-serve.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib-serve.sh"
lib_init ts-partner
trap lib_cleanup EXIT
trap 'exit 130' INT TERM

EX=$ROOT/examples/typescript
start=$SECONDS

say "npm ci in examples/typescript"
(cd "$EX" && timeout 600 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) ||
	die "npm ci failed in examples/typescript"

say "openapi-typescript: openapi/openapi.yaml -> examples/typescript/src/schema.d.ts"
(cd "$EX" && timeout 120 npm run --silent generate) || die "openapi-typescript could not generate types from openapi/openapi.yaml"

say "tsc --noEmit (strict)"
(cd "$EX" && timeout 300 node_modules/.bin/tsc --noEmit -p tsconfig.json) ||
	die "the partner example does not type-check against the contract's generated types"
say "types OK"

lib_build
lib_start_server

say "running src/partner.ts against $SERVER_URL"
rc=0
(cd "$EX" && CHARGENET_URL=$SERVER_URL CHARGENET_API_KEY=$API_KEY timeout 300 node_modules/.bin/tsx src/partner.ts) || rc=$?
if ((rc != 0)); then
	say "server log (last 20 lines):"
	tail -n 20 "$WORK/server.log" || true
	die "the partner scenario failed (exit $rc) after $((SECONDS - start)) s"
fi
say "PASS: TypeScript partner scenario against the contract in $((SECONDS - start)) s"
