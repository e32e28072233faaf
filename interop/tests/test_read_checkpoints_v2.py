"""V2 checkpoints (delta.checkpointPolicy v2): the table of test_read_checkpoints.py, its
checkpoints a UUID-named JSON top file with a Parquet sidecar. Polars 2.1 refuses the
v2Checkpoint reader feature (test_polars_refuses_v2_checkpoints; docs/compatibility.md)."""

from __future__ import annotations

import pytest

from support.matrix import *  # noqa: F403 (the read matrix's tests)
from support.tidemark import Job
from test_read_checkpoints import CHECKPOINTS, FILTERS, STEPS, VERSIONS, checkpointed_job  # noqa: F401

ENGINES = ["spark", "deltalake"]


def build(root, _) -> Job:
    j = checkpointed_job(root, "checkpoint_v2", {"delta.checkpointPolicy": "v2"})
    log = j.table / "_delta_log"
    assert sorted(p.name[:20] for p in log.glob("*.checkpoint.*.json")) == [f"{v:020d}" for v in CHECKPOINTS]
    assert list((log / "_sidecars").glob("*.parquet")), "no V2 sidecar"
    assert not list(log.glob("*.checkpoint.parquet")), "a classic checkpoint in a V2 table"
    return j


def test_polars_refuses_v2_checkpoints(job):
    """When a Polars release reads them, this fails: move Polars into ENGINES and update docs/compatibility.md."""
    import polars as pl

    with pytest.raises(Exception, match=r"reader features \['v2Checkpoint'\], which polars does not support"):
        pl.scan_delta(str(job.table)).collect()
