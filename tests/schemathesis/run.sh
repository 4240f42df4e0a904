#!/usr/bin/env bash
# Runs schemathesis (tests/py/requirements.txt pins it) against a real hds:
# a fresh data dir, `hds serve` on an ephemeral loopback port, then every
# check twice: once with a Source key, once with a user token. Exits non-zero
# on any failure. Usage: tests/schemathesis/run.sh [path/to/hds]
# Environment: ST_MAX_EXAMPLES (default 40 per operation), ST_SEED (default 1);
# RESPONSES: a directory of responses the API tests recorded, checked against
# the OpenAPI document too (tests/py/openapi_conformance.py).
set -euo pipefail
here=$(dirname "$0")
# Paths given relative to where the script was called from.
hds=$(realpath "${1:-$here/../../target/debug/hds}")
st=$(realpath "${SCHEMATHESIS:-$here/../../.venv/bin/schemathesis}")
# The Python that runs the conformance check: the one beside schemathesis
# (its virtualenv has jsonschema_rs), unless PYTHON names another.
python=$(realpath -s "${PYTHON:-$(dirname "$st")/python}")
responses=${RESPONSES:+$(realpath -s "$RESPONSES")}
cd "$here"
work=$(mktemp -d)
server=""
cleanup() {
    if [ -n "$server" ]; then kill "$server" 2> /dev/null || true; wait "$server" 2> /dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

"$hds" init --data-dir "$work/data" --json > "$work/creds.json"
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$work/creds.json" "$1"; }
# Both rate limits are off so the run reaches the handlers (schemathesis
# sends many unauthenticated requests on purpose); the 429 they would answer
# is documented on every operation they apply to.
mkfifo "$work/out"
"$hds" serve --data-dir "$work/data" --listen 127.0.0.1:0 --rate-limit 0 --anonymous-rate-limit 0 \
    > "$work/out" 2> "$work/serve.log" &
server=$!
exec 3< "$work/out"
read -r first <&3
base=${first#hds listening on }
# Keep draining the server's stdout so it never blocks on a full pipe.
cat <&3 > /dev/null &

status=0
# One worker: with two threads, Hypothesis' lambda descriptions can hit a
# CPython 3.11 bug (before 3.11.8: "AST constructor recursion depth
# mismatch", python/cpython#106905) when both parse source at once, which
# schemathesis reports as a runtime error that is no finding about hds.
for who in source_key_live user_token; do
    echo "schemathesis: $base with $who"
    if ! "$st" --config-file schemathesis.toml run "$base/v1/openapi.json" \
        -H "Authorization: Bearer $(field "$who")" \
        --max-examples "${ST_MAX_EXAMPLES:-40}" --seed "${ST_SEED:-1}" \
        --workers 1 --no-color > "$work/$who.txt" 2>&1; then
        status=1
        cat "$work/$who.txt"
    fi
    # The summary: operations, test cases, failures.
    sed -n '/^API Operations:/,$p' "$work/$who.txt" | grep -E "Selected|Tested|generated|failures|passed|Failures|❌|=====" || true
done
# Every JSON response the API tests received (RESPONSES: the directory
# tests/api/helpers.rs recorded them in) against this server's document.
if [ -n "$responses" ]; then
    if ! "$python" ../py/openapi_conformance.py "$base/v1/openapi.json" "$responses"; then
        status=1
    fi
fi
if grep -q "panicked" "$work/serve.log"; then
    echo "schemathesis: the server panicked:" >&2
    grep -B2 -A5 "panicked" "$work/serve.log" >&2
    status=1
fi
exit "$status"
