#!/usr/bin/env bash
# The whole test suite (README: "The two commands"). Needs python3 with the
# packages in tests/py/requirements.txt (independent receipt and fingerprint
# checks), Debian's chromium and `npm ci --prefix tests/node` (browser and
# identity-provider tests); .ci/run installs all three.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c 'import jwt, rfc8785, cryptography' 2>/dev/null; then
    echo "missing Python test dependencies: pip install -r tests/py/requirements.txt" >&2
    exit 2
fi
if ! command -v chromium > /dev/null || [ ! -d tests/node/node_modules/playwright-core ]; then
    echo "missing browser test dependencies: apt-get install chromium; npm ci --prefix tests/node" >&2
    exit 2
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --all-targets --locked 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# cargo prints one "test result" line per test binary (the last one is the
# benchmark example's, with 0 tests); close with the total.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i == "passed;") p += $(i-1); if ($i == "failed;") f += $(i-1) } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
