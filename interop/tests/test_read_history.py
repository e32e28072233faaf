"""History (scd2) tables as tidemark writes them, read by Spark, delta-rs and Polars: every version
of a key with valid_from / valid_to / is_current. With deletion vectors (a close marks the stored
row and writes its closed copy), without them (files rewritten), and fed by full extracts
(`source.snapshot` with `snapshotAsOf`: absent keys closed at the extract's as-of). Late rows
split intervals, an equal version is a no-op, a delete closes a key and a key comes back; the
latest rows are checked against a history worked out from the landed files (support/history.py)."""

from __future__ import annotations

import pyarrow as pa

from support import delta_log
from support.canon import canon_rows, diff
from support.checks import LINEAGE, assert_spark_history, both, types_at
from support.data import ORDERS, order, orders
from support.filters import Cmp, IsNull
from support.history import HISTORY, scd2_rows
from support.matrix import *  # noqa: F403 (the read matrix's tests)
from support.tidemark import Job

# Rows arriving out of order, over five commits: inserts; newer versions and new keys; late
# versions splitting an interval, the same version again (another file), a new version; deletes
# closing keys; a deleted key back, a late version before its delete, more versions.
CHANGES = [
    orders(order(i, 1) for i in range(1, 31)),
    orders([*(order(i, 3) for i in (2, 5, 12, 22)), *(order(i, 1) for i in range(31, 34))]),
    orders([order(2, 2), order(5, 2), order(12, 3), order(6, 2)]),
    orders([order(7, 4, "D"), order(22, 4, "D"), order(13, 4)]),
    orders([order(7, 6), order(7, 2), *(order(i, 5) for i in (14, 15, 16, 31))]),
]

# Full extracts, each taken at `as_of`: keys gone from one are closed there; an unchanged row is
# a no-op; a closed key comes back with a newer version.
EXTRACT = pa.schema([*ORDERS, ("as_of", pa.int64())])


def extract(as_of: int, rows) -> pa.Table:
    return pa.Table.from_pylist([{**r, "as_of": as_of} for r in rows], schema=EXTRACT)


def extracts() -> list[pa.Table]:
    e0 = {i: order(i, 1) for i in range(1, 21)}
    e1 = {**{i: r for i, r in e0.items() if i not in (3, 8)}, 4: order(4, 12), 9: order(9, 12), 21: order(21, 15), 22: order(22, 15)}
    e2 = {**{i: r for i, r in e1.items() if i != 9}, 3: order(3, 25), 4: order(4, 28)}
    e3 = {i: r for i, r in e2.items() if i != 10}
    e4 = {**e3, 11: order(11, 42), 23: order(23, 45)}
    return [extract(10 * (n + 1), e.values()) for n, e in enumerate([e0, e1, e2, e3, e4])]


SCD2 = {"mode": "scd2", "key": ["id"], "orderBy": "seq", "maxRowsPerFile": 10}
SCENARIOS = {
    # rewriteFilesBelow 0: the files here are tiny, and would be rewritten rather than get a vector
    "scd2_dv": ({**SCD2, "deleteWhen": "op = 'D'", "deletionVectors": True, "rewriteFilesBelow": 0}, {}, CHANGES),
    "scd2_no_dv": ({**SCD2, "deleteWhen": "op = 'D'", "deletionVectors": False}, {}, CHANGES),
    "scd2_snapshot": ({**SCD2, "deletionVectors": True, "rewriteFilesBelow": 0}, {"snapshot": True, "snapshotAsOf": "as_of"}, extracts()),
}
TABLES = list(SCENARIOS)
VERSIONS = list(range(5))
assert all(len(steps) == len(VERSIONS) for _, _, steps in SCENARIOS.values())
# The history columns' edges, and two of the data's (the read matrix of the other tables covers
# the data columns' filters at length; each filtered read costs Spark a scan).
FILTERS = {
    "id =max": ("id", "=max"),
    "amount <mid": ("amount", "<mid"),
    "valid_from =max": ("valid_from", "=max"),
    "valid_to is null": IsNull("valid_to"),
    "valid_to is not null": IsNull("valid_to", negate=True),
    "is_current = false": Cmp("is_current", "=", False),
    "current versions of ids 2 to 7": both(Cmp("id", ">=", 2), Cmp("id", "<", 8), Cmp("is_current", "=", True)),
}


def build(root, name: str) -> Job:
    target, source, steps = SCENARIOS[name]
    j = Job(root, name, target, source=source)
    for step in steps:
        j.load(step)
    assert sorted(j.snapshots) == list(range(len(steps)))
    added = [a["add"] for v in j.snapshots for a in j.log_entries(v) if "add" in a]
    if target["deletionVectors"]:
        # What these tables are for: closes marked in stored files by deletion vectors.
        assert len({a["path"] for a in added if a.get("deletionVector")}) >= 2, added
    else:
        assert not any(a.get("deletionVector") for a in added)
        assert delta_log.protocol(j.table)["minReaderVersion"] == 1
    return j


def test_rows_are_what_the_source_files_say(reads, engine):  # noqa: F811 (the history's own oracle)
    """Every version the engine reads at the latest commit is the one the landed rows give when
    they arrive in order of seq (independent of tidemark's own reading)."""
    read = reads[engine]
    job = read.job
    _, source, _ = SCENARIOS[job.name]
    types = {c: t for c, t in types_at(job, None).items() if c not in LINEAGE}
    assert set(HISTORY) <= set(types), types
    want = scd2_rows(job.landed, "id", "seq", as_of=source.get("snapshotAsOf"))
    expected = canon_rows(({c: r.get(c) for c in types} for r in want), types)
    actual = [{c: r[c] for c in types} for r in read.at(None)]
    problem = diff(expected, actual)
    assert problem is None, f"{read.engine} vs the history the source files give:\n{problem}"


def test_spark_history_counts_what_each_commit_did(spark, job):  # noqa: F811 (a version's key is (id, valid_from))
    """DESCRIBE HISTORY's row counts are what each commit did to the versions: a version is one
    (id, valid_from); a close or a split is an update of it, a new version an insert."""
    assert_spark_history(spark, job, ["id", "valid_from"])
