#!/usr/bin/env bash
# The whole test suite (README: "The two commands"). Installs what the tests need
# when it is missing, runs `cargo test --all-targets`, then schemathesis against
# the server it built and the OpenAPI conformance of every response the API
# tests received (tests/schemathesis/run.sh), and closes with
# "tests: N passed, M failed". What it installs:
# - .venv/: a virtualenv with tests/py/requirements.txt (PyJWT, rfc8785: the
#   independent receipt and fingerprint checks the tests run as `python3`;
#   schemathesis, the API fuzzer run last against the real server);
# - tests/node/node_modules: `npm ci` from package-lock.json (playwright-core,
#   identity providers on loopback);
# - Debian's chromium (the browser tests drive /usr/bin/chromium).
# Installs are silent unless they fail; then their output is shown.
set -euo pipefail
cd "$(dirname "$0")/.."

# Runs a command with its output kept aside; shows that output if it fails.
quietly() {
    local what=$1 out
    shift
    out=$(mktemp)
    if ! "$@" > "$out" 2>&1; then
        echo "test setup: $what failed: $*" >&2
        cat "$out" >&2
        rm -f "$out"
        exit 2
    fi
    rm -f "$out"
}

# Installs Debian packages as root or through passwordless sudo; otherwise
# says what to install and stops.
apt_updated=""
apt_install() {
    local as_root=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo > /dev/null && sudo -n true 2> /dev/null; then
            as_root=(sudo -n)
        else
            echo "test setup: $* missing and this user cannot install it;" \
                "as root run: apt-get update && apt-get install -y $*" >&2
            exit 2
        fi
    fi
    echo "test setup: apt-get install $*" >&2
    if [ -z "$apt_updated" ]; then
        quietly "apt-get update" ${as_root[@]+"${as_root[@]}"} apt-get update -q
        apt_updated=1
    fi
    quietly "apt-get install $*" ${as_root[@]+"${as_root[@]}"} env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q "$@"
}

# Python: a project virtualenv, (re)installed when its imports fail or
# requirements.txt changed since the last install.
venv=.venv
py_ready() {
    "$venv/bin/python" -c 'import jwt, rfc8785, cryptography, schemathesis, jsonschema_rs, standardwebhooks, aiosmtpd' 2> /dev/null &&
        cmp -s tests/py/requirements.txt "$venv/requirements.installed"
}
if ! py_ready; then
    echo "test setup: installing tests/py/requirements.txt into $venv/" >&2
    if ! "$venv/bin/python" -c '' 2> /dev/null; then
        # Debian's own python3 needs python3-venv for `-m venv` (ensurepip).
        if ! python3 -c 'import ensurepip, venv' 2> /dev/null; then
            apt_install python3-venv
        fi
        quietly "creating $venv" python3 -m venv --clear "$venv"
    fi
    quietly "pip install" "$venv/bin/python" -m pip install --quiet \
        --disable-pip-version-check -r tests/py/requirements.txt
    cp tests/py/requirements.txt "$venv/requirements.installed"
    if ! py_ready; then
        echo "test setup: $venv still cannot import jwt, rfc8785, cryptography, schemathesis, jsonschema_rs, standardwebhooks, aiosmtpd" >&2
        exit 2
    fi
fi
# The tests run tests/py/*.py as `python3` (tests/api/helpers.rs `python()`).
export PATH="$PWD/$venv/bin:$PATH"

# Node: npm ci when node_modules is missing or older than package-lock.json
# (the stamp is the lock file node_modules was installed from).
stamp=tests/node/node_modules/.hds-package-lock.json
if ! cmp -s tests/node/package-lock.json "$stamp" ||
    [ ! -d tests/node/node_modules/playwright-core ]; then
    echo "test setup: npm ci --prefix tests/node" >&2
    quietly "npm ci" npm ci --prefix tests/node --no-audit --no-fund --loglevel=error
    cp tests/node/package-lock.json "$stamp"
fi

# Chromium: Debian's package (the browser tests drive /usr/bin/chromium).
if ! command -v chromium > /dev/null; then
    apt_install chromium
    if ! command -v chromium > /dev/null; then
        echo "test setup: chromium is still missing after apt-get install" >&2
        exit 2
    fi
fi

log=$(mktemp)
# Every JSON response the API tests receive, for the OpenAPI conformance
# check (tests/py/openapi_conformance.py) run with schemathesis below.
responses=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$responses"' EXIT
set +e
HDS_RECORD_RESPONSES="$responses" cargo test --all-targets --locked 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
# schemathesis against the server binary the tests just built: every check,
# with a Source key and with a user token; 0 failures is the gate. Then the
# tests' own responses against the same server's OpenAPI document.
if [ "$status" -eq 0 ]; then
    SCHEMATHESIS="$PWD/$venv/bin/schemathesis" RESPONSES="$responses" \
        bash tests/schemathesis/run.sh target/debug/hds
    status=$?
fi
set -e
# cargo prints one "test result" line per test binary (the last one is the
# benchmark example's, with 0 tests); close with the total.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i == "passed;") p += $(i-1); if ($i == "failed;") f += $(i-1) } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"
