"""Replace-mode tables (small tables reloaded whole: each delivery becomes the whole table in one
`WRITE` Overwrite commit) as tidemark writes them, read by Spark, delta-rs and Polars at every
version: with a key (a delivery keeps its latest row per key) and without one (every row kept,
duplicates included); a delivery that shrinks the table, an empty one that empties it, and one
after it."""

from __future__ import annotations

from support import delta_log
from support.canon import canon_rows, diff
from support.checks import LINEAGE, types_at
from support.data import ORDERS, order, orders
from support.matrix import *  # noqa: F403 (the read matrix's tests)
from support.history import replace_rows
from support.tidemark import Job

DELIVERIES = [
    orders(order(i, 1) for i in range(1, 26)),
    # key 5 twice: its older row must lose (with a key), or stay beside the newer (without)
    orders([*(order(i, 2) for i in range(3, 31)), order(5, 1)]),
    orders(order(i, 3) for i in range(1, 11)),
    orders([]),
    orders([*(order(i, 4) for i in range(1, 13)), order(12, 4)]),
]
VERSIONS = list(range(len(DELIVERIES)))
SCENARIOS = {
    "replace_keyed": {"mode": "replace", "key": ["id"], "orderBy": "seq", "maxRowsPerFile": 10},
    "replace_rows": {"mode": "replace", "maxRowsPerFile": 10},
}
TABLES = list(SCENARIOS)
# Edges of the key and the version, and NULLs (the files of a replaced table are all new ones).
FILTERS = {f"{column} {kind}": (column, kind) for column, kind in [("id", "=min"), ("id", "=max"), ("seq", "=max"), ("customer", "is null"), ("amount", "=max")]}


def build(root, name: str) -> Job:
    j = Job(root, name, SCENARIOS[name])
    for delivery in DELIVERIES:
        j.load(delivery)
    assert sorted(j.snapshots) == VERSIONS
    assert delta_log.protocol(j.table)["minReaderVersion"] == 1
    return j


def test_rows_are_what_the_source_files_say(reads, engine):  # noqa: F811 (the newest delivery, whole)
    """The latest rows are the newest delivery's (per key its latest row, with a key), value for
    value, worked out from the landed files without tidemark."""
    read = reads[engine]
    job = read.job
    types = {c: t for c, t in types_at(job, None).items() if c not in LINEAGE}
    key = job.target.get("key")
    want = replace_rows(job.landed, key[0], job.target["orderBy"]) if key else job.landed[-1].to_pylist()
    expected = canon_rows(({c: r.get(c) for c in types} for r in want), types)
    assert len(expected) == (12 if key else 13)
    actual = [{c: r[c] for c in types} for r in read.at(None)]
    problem = diff(expected, actual)
    assert problem is None, f"{read.engine} vs the newest delivery:\n{problem}"


def test_spark_history_counts_what_each_commit_did(spark, job):  # noqa: F811 (an overwrite, not a MERGE)
    """DESCRIBE HISTORY lists each replacement as tidemark recorded it, a WRITE in Overwrite mode
    after the first commit, with the rows it wrote and the rows and files it removed."""
    history = {r["version"]: r for r in spark.sql(f"DESCRIBE HISTORY delta.`{job.table}`").collect()}
    assert sorted(history) == VERSIONS, sorted(history)
    ours = {c["version"]: c for c in job.history()}
    for version in VERSIONS:
        h, report = history[version], job.reports[version]
        assert h["operation"] == ours[version]["operation"], (version, h["operation"], ours[version])
        metrics = h["operationMetrics"]
        rows = len(job.snapshots[version])
        assert int(metrics["numOutputRows"]) == rows == report["inserted"], (version, metrics, report)
        if version == 0:
            continue
        assert h["operation"] == "WRITE" and h["operationParameters"]["mode"] == "Overwrite", (version, h)
        before = len(job.snapshots[version - 1])
        assert int(metrics["numDeletedRows"]) == before == report["deleted"], (version, metrics, report)
        assert int(metrics["numRemovedFiles"]) == len(delta_log.live_files(job.table, version - 1)), (version, metrics)
