#!/usr/bin/env bash
# The whole test suite (README: "The two commands"). Needs python3 with the
# packages in tests/py/requirements.txt: the receipt and fingerprint checks use
# them as implementations independent of hds.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! python3 -c 'import jwt, rfc8785, cryptography' 2>/dev/null; then
    echo "missing Python test dependencies: pip install -r tests/py/requirements.txt" >&2
    exit 2
fi
cargo test --all-targets --locked
