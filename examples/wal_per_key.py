#!/usr/bin/env python3
"""WAL bytes per stored idempotency key, by key shape (docs/benchmarks.md,
"Keyed creates"). Standalone: the table of migrations/0001_init.sql in a
temporary SQLite file, WAL, synchronous=FULL, 48 inserts per transaction (a
group commit at ~64 clients), 40,000 rows. Run: python3 examples/wal_per_key.py
"""
import os
import sqlite3
import tempfile
import uuid

SCHEMA = """CREATE TABLE idempotency_keys (source_id TEXT NOT NULL, environment TEXT NOT NULL,
  key TEXT NOT NULL, request_hash TEXT NOT NULL, status_code INTEGER NOT NULL,
  response TEXT NOT NULL, created_at TEXT NOT NULL,
  PRIMARY KEY (source_id, environment, key)) STRICT;
CREATE INDEX idempotency_keys_by_age ON idempotency_keys(created_at);"""


def key_of(shape, i):
    if shape == "sequential":
        return f"k{i:012d}"
    if shape == "64 ranges (the bench)":
        return f"bench-{(i % 64) * 100_000_000 + i // 64}"
    return str(uuid.uuid4())


def run(shape, response_bytes, n=40_000, batch=48):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.db")
        c = sqlite3.connect(path, isolation_level=None)
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("PRAGMA synchronous=FULL")
        c.execute("PRAGMA wal_autocheckpoint=0")  # keep every frame to count it
        c.executescript(SCHEMA)
        body = "x" * response_bytes
        i = 0
        while i < n:
            c.execute("BEGIN IMMEDIATE")
            for _ in range(batch):
                c.execute(
                    "INSERT INTO idempotency_keys VALUES (?,?,?,?,?,?,?)",
                    ("src_01JXXXXXXXXXXXXXXXXXXXXXXX", "live", key_of(shape, i),
                     "h" * 64, 201, body, f"2026-11-23T10:{i:09d}"),
                )
                i += 1
            c.execute("COMMIT")
        wal = os.path.getsize(path + "-wal")
        c.close()
    print(f"{shape:24} response {response_bytes:5} B: {wal / n / 1024:5.2f} KiB of WAL per key")


for shape, size in [("sequential", 2000), ("64 ranges (the bench)", 2000), ("random", 2000), ("random", 0)]:
    run(shape, size)
