"""Column mapping `name` and `id`: the first commit's files lack `score`, the second adds it and
`unit price.eur` (a name only column mapping allows); files, statistics and deletion vectors
use physical names (and field ids), readers see the logical ones, at every version."""

from __future__ import annotations

import pytest

from support import delta_log
from support.checks import KINDS
from support.data import mapped_steps
from support.matrix import *  # noqa: F403 (the read matrix's tests)
from support.tidemark import Job

# Polars 2.1 refuses column mapping (test_polars_refuses_column_mapping); docs/compatibility.md says so.
ENGINES = ["spark", "deltalake"]
STEPS = mapped_steps()
VERSIONS = list(range(len(STEPS)))
FILTERS = {
    f"{column} {kind}": (column, kind)
    for column in ("id", "customer", "amount", "day", "at", "score", "unit price.eur")
    for kind in KINDS
}


TABLES = ["name", "id"]


def build(root, mode: str) -> Job:
    target = {"key": ["id"], "orderBy": "seq", "columnMapping": mode, "maxRowsPerFile": 8, "rewriteFilesBelow": 0}
    j = Job(root, f"mapping_{mode}", target)
    for step in STEPS:
        j.load(step)
    assert sorted(j.snapshots) == VERSIONS
    meta = delta_log.metadata(j.table)
    assert meta["configuration"]["delta.columnMapping.mode"] == mode
    fields = {f["name"]: f for f in delta_log.schema(j.table)["fields"]}
    assert fields["unit price.eur"]["metadata"]["delta.columnMapping.physicalName"] != "unit price.eur"
    assert "score" not in delta_log.column_types(j.table, 0)
    return j


def test_polars_refuses_column_mapping(job):
    """Polars reads through delta-rs's kernel but declines columnMapping tables by name; when a
    release reads them, this fails: move Polars into ENGINES and update docs/compatibility.md."""
    import polars as pl

    with pytest.raises(Exception, match=r"reader features \['columnMapping'\], which polars does not support"):
        pl.scan_delta(str(job.table)).collect()
