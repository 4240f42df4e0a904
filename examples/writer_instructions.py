#!/usr/bin/env python3
"""Instructions the writer thread spends per create, counted by callgrind.

Throughput on a shared 2-core machine moves by 30 % from one window to the
next; instruction counts do not. This runs `examples/bench` (creates, 16
clients, 10 s) against each given `hds` binary started under
`valgrind --tool=callgrind --separate-threads=yes`, finds the writer
thread's profile (the thread that runs `hds::store::db::writer_loop`), and
divides its instructions by the Actions in the database afterwards (the
bench's data dir is kept for that; a count of calls to a function would
depend on what the compiler inlined).
Counts cover user space only (SQLite, the job, serialisation), not the
kernel's write and fsync. The last column divides the instructions of every
thread of the server (HTTP, parsing, hashing, the writer) by the creates. Under valgrind the server runs ~100x slower, so
batches are larger than at full speed; compare binaries with each other,
not with the bench's µs figures.

    cargo build --release --bins --examples
    python3 examples/writer_instructions.py /path/to/old/hds target/release/hds
    python3 examples/writer_instructions.py --keyed target/release/hds

`--keyed` sends every create with its own `Idempotency-Key` (the bench's
keyed phase).

Needs valgrind (Debian package `valgrind`).
"""

import glob
import os
import re
import shlex
import sqlite3
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "target", "release", "examples", "bench")


def profile_total(path):
    """(total Ir, runs the writer loop) of one thread's profile.

    Parses callgrind's format with compressed names (`fn=(id) name` once,
    then `fn=(id)`). A profile cut short (no `totals:` line at its end)
    counts as nothing."""
    total, writer = None, False
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^c?fn=\(\d+\) (.*)$", line.rstrip("\n"))
            if m:
                # The writer loop itself may be inlined into its thread.
                writer = writer or re.search(r"hds::store::db::(writer_loop|guarded)\b", m.group(1)) is not None
            elif line.startswith("totals:"):
                total = int(line.split()[1])
    if total is None:
        return 0, False
    return total, writer


def measure(hds, out_dir, phase):
    tag = os.path.join(out_dir, "cg")
    wrapper = os.path.join(out_dir, "hds-under-callgrind")
    with open(wrapper, "w") as f:
        f.write(
            "#!/bin/sh\nexec valgrind --tool=callgrind --separate-threads=yes "
            f"--dump-instr=no --callgrind-out-file={shlex.quote(tag)}.%p "
            f"{shlex.quote(os.path.abspath(hds))} \"$@\"\n"
        )
    os.chmod(wrapper, 0o755)
    data = os.path.join(out_dir, "data")
    os.mkdir(data)
    run = subprocess.run(
        [BENCH, "--hds", wrapper, "--phases", phase, "--concurrency", "16", "--duration", "10",
         "--keep-data", "--data-parent", data],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        sys.exit(f"bench failed for {hds}:\n{run.stderr[-2000:]}")
    dbs = glob.glob(os.path.join(data, "*", "hds.db"))
    if len(dbs) != 1:
        sys.exit(f"expected one kept database under {data}, found {dbs}")
    with sqlite3.connect(dbs[0]) as c:
        creates = c.execute("SELECT count(*) FROM actions").fetchone()[0]
    writer_total, all_total = None, 0
    for path in glob.glob(tag + ".*-*"):
        total, writer = profile_total(path)
        all_total += total
        if writer and total:
            writer_total = total
    if writer_total is None:
        sys.exit(f"no complete writer thread profile for {hds}")
    return creates, writer_total, all_total


def main():
    args = sys.argv[1:]
    phase = "keyed" if args[:1] == ["--keyed"] else "creates"
    binaries = args[1:] if phase == "keyed" else args
    if not binaries:
        sys.exit(__doc__)
    print(f"{'binary':<40} {'creates':>8} {'writer Ir':>14} {'Ir per create':>14} {'all threads':>12}  ({phase})")
    for hds in binaries:
        with tempfile.TemporaryDirectory(prefix="hds-cg-") as d:
            creates, writer, every = measure(hds, d, phase)
        print(f"{hds:<40} {creates:>8} {writer:>14,} {writer // creates:>14,} {every // creates:>12,}")


if __name__ == "__main__":
    main()
