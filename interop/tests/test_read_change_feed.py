"""A merge table with the change data feed (and deletion vectors): the read matrix, and the
feed itself, read by Spark (readChangeFeed) and delta-rs (load_cdf), holds per commit exactly
what the commit did to the rows. Polars has no change feed reader."""

from __future__ import annotations

import pyarrow as pa

from support import delta_log
from support.checks import KINDS, assert_change_feed
from support.data import merge_steps
from support.matrix import *  # noqa: F403 (the read matrix's tests)
from support.tidemark import Job

STEPS = merge_steps()
VERSIONS = list(range(len(STEPS)))
FILTERS = {f"{column} {kind}": (column, kind) for column in ("id", "customer", "amount", "at") for kind in KINDS}


def build(root, _) -> Job:
    target = {"key": ["id"], "orderBy": "seq", "deleteWhen": "op = 'D'", "changeDataFeed": True, "maxRowsPerFile": 10, "rewriteFilesBelow": 0}
    j = Job(root, "change_feed", target)
    for step in STEPS:
        j.load(step)
    assert sorted(j.snapshots) == VERSIONS
    assert delta_log.metadata(j.table)["configuration"].get("delta.enableChangeDataFeed") == "true"
    assert list(j.table.glob("_change_data/*.parquet")), "no _change_data files: the feed would come from add/remove alone"
    return j


def test_spark_read_change_feed(spark, job):
    feed = spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", 0).option("endingVersion", job.latest).load(str(job.table))
    assert_change_feed(job, [r.asDict(recursive=True) for r in feed.collect()], f"Spark {spark.version}")


def test_deltalake_load_cdf(job):
    from deltalake import DeltaTable, __version__

    feed = pa.table(DeltaTable(str(job.table)).load_cdf(starting_version=0, ending_version=job.latest))
    assert_change_feed(job, feed.to_pylist(), f"deltalake {__version__}")
