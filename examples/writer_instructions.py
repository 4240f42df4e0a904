#!/usr/bin/env python3
"""Instructions the writer thread spends per create, counted by callgrind.

Throughput on a shared 2-core machine moves by 30 % from one window to the
next; instruction counts do not. This runs `examples/bench` (creates, 16
clients, 10 s) against each given `hds` binary started under
`valgrind --tool=callgrind --separate-threads=yes`, finds the writer
thread's profile (the thread that runs `hds::store::db::writer_loop`), and
divides its instructions by the calls to `hds::store::actions::insert`.
Counts cover user space only (SQLite, the job, serialisation), not the
kernel's write and fsync. Under valgrind the server runs ~100x slower, so
batches are larger than at full speed; compare binaries with each other,
not with the bench's µs figures.

    cargo build --release --bins --examples
    python3 examples/writer_instructions.py /path/to/old/hds target/release/hds

Needs valgrind (Debian package `valgrind`).
"""

import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "target", "release", "examples", "bench")


def profile_counts(path, func):
    """(calls to the function named `func`, total Ir, runs the writer loop).

    Parses callgrind's format with compressed names (`fn=(id) name` once,
    then `fn=(id)`); `calls=` lines follow their `cfn=`. A profile cut short
    (no `totals:` line at its end) counts as nothing."""
    names, calls, total, cfn, writer = {}, 0, None, None, False
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if m:
                kind, i, name = m.groups()
                if name:
                    names[i] = name
                    writer = writer or "hds::store::db::writer_loop" in name
                cfn = names.get(i, "") if kind == "cfn" else None
                continue
            if line.startswith("calls=") and cfn is not None:
                if cfn == func:
                    calls += int(line.split()[0][len("calls="):])
                cfn = None
            elif line.startswith("totals:"):
                total = int(line.split()[1])
    if total is None:
        return 0, 0, False
    return calls, total, writer


def measure(hds, out_dir):
    tag = os.path.join(out_dir, "cg")
    wrapper = os.path.join(out_dir, "hds-under-callgrind")
    with open(wrapper, "w") as f:
        f.write(
            "#!/bin/sh\nexec valgrind --tool=callgrind --separate-threads=yes "
            f"--dump-instr=no --callgrind-out-file={shlex.quote(tag)}.%p "
            f"{shlex.quote(os.path.abspath(hds))} \"$@\"\n"
        )
    os.chmod(wrapper, 0o755)
    run = subprocess.run(
        [BENCH, "--hds", wrapper, "--phases", "creates", "--concurrency", "16", "--duration", "10"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if run.returncode != 0:
        sys.exit(f"bench failed for {hds}:\n{run.stderr[-2000:]}")
    for path in glob.glob(tag + ".*-*"):
        calls, total, writer = profile_counts(path, "hds::store::actions::insert")
        if writer and calls:
            return calls, total
    sys.exit(f"no complete writer thread profile with creates for {hds}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    print(f"{'binary':<40} {'creates':>8} {'writer Ir':>14} {'Ir per create':>14}")
    for hds in sys.argv[1:]:
        with tempfile.TemporaryDirectory(prefix="hds-cg-") as d:
            calls, total = measure(hds, d)
        print(f"{hds:<40} {calls:>8} {total:>14,} {total // calls:>14,}")


if __name__ == "__main__":
    main()
