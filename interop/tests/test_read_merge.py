"""Merge tables as tidemark writes them, read by Spark, delta-rs and Polars: with deletion vectors
(the default; several per file, some rewritten) and with `deletionVectors: false` (files
rewritten). Five commits: inserts, updates over every file, updates of rows whose file already
has a vector, deletes and a stale row, more updates."""

from __future__ import annotations

import pytest

from support import delta_log
from support.checks import KINDS, both
from support.data import ORDERS, merge_steps
from support.filters import Cmp, IsNull
from support.matrix import *  # noqa: F403 (the read matrix's tests)
from support.tidemark import Job

STEPS = merge_steps()
VERSIONS = list(range(len(STEPS)))
SCENARIOS = {
    # rewriteFilesBelow 0: the files here are tiny, and would be rewritten rather than get a vector
    "merge_dv": {"deletionVectors": True, "rewriteFilesBelow": 0},
    "merge_no_dv": {"deletionVectors": False},
}


TABLES = list(SCENARIOS)


def build(root, name: str) -> Job:
    target = {"key": ["id"], "orderBy": "seq", "deleteWhen": "op = 'D'", "maxRowsPerFile": 10, **SCENARIOS[name]}
    j = Job(root, name, target)
    for step in STEPS:
        j.load(step)
    assert sorted(j.snapshots) == VERSIONS
    vectors = [a["add"]["deletionVector"] for v in VERSIONS for a in j.log_entries(v) if "add" in a and a["add"].get("deletionVector")]
    rewritten = [a["remove"] for v in VERSIONS for a in j.log_entries(v) if "remove" in a and a["remove"].get("deletionVector")]
    if SCENARIOS[name]["deletionVectors"]:
        # What this table is for: vectors on several files, and a file whose vector was replaced.
        assert len({a["add"]["path"] for v in VERSIONS for a in j.log_entries(v) if "add" in a and a["add"].get("deletionVector")}) >= 3, vectors
        assert rewritten, "no deletion vector was rewritten"
    else:
        assert not vectors
        assert delta_log.protocol(j.table)["minReaderVersion"] == 1
    return j


FILTERS = {
    **{f"{column} {kind}": (column, kind) for column in ORDERS.names for kind in KINDS if column != "active" or kind.startswith("is")},
    "active = true": Cmp("active", "=", True),
    "active = false": Cmp("active", "=", False),
    "10 <= id < 20 and customer is not null": both(Cmp("id", ">=", 10), Cmp("id", "<", 20), IsNull("customer", negate=True)),
}


def test_deltalake_pyarrow_dataset_reads_reader_1_tables_and_refuses_deletion_vectors(job):
    """delta-rs has a second read path, DeltaTable.to_pyarrow_table() (a pyarrow dataset): it
    reads the table without deletion vectors and refuses the one with them, by name."""
    from deltalake import DeltaTable

    from support.canon import canon_rows, diff
    from support.checks import types_at

    table = DeltaTable(str(job.table))
    if SCENARIOS[job.name]["deletionVectors"]:
        with pytest.raises(Exception, match=r"reader features: \{'deletionVectors'\} but these are not yet supported by the deltalake reader"):
            table.to_pyarrow_table()
    else:
        types = types_at(job, None)
        assert diff(canon_rows(job.snapshots[job.latest], types), canon_rows(table.to_pyarrow_table().to_pylist(), types)) is None
