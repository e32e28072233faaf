"""A merge table with deletion vectors, row tracking, in-commit timestamps and a timestamp_ntz
column, maintained by tidemark: five merges, `optimize --purge` (every file with a vector
rewritten), a merge that writes vectors again, `optimize` (compaction). Read by Spark, delta-rs
and Polars at every version (by version, and by timestamp through the in-commit timestamps);
Spark's row ids stay unique and stable through the merges and both optimizes."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa

from support import delta_log
from support.canon import canon_rows, diff
from support.checks import KINDS, types_at
from support.data import LOCAL, local_at, local_steps, order
from support.matrix import (  # noqa: F401 (the read matrix's tests)
    test_filtered_read_keeps_every_matching_row,
    test_rows_are_what_the_source_files_say,
    test_rows_equal_tidemark_show,
    test_spark_detail_agrees_with_the_log_and_status,
    test_statistics_bound_every_file,
)
from support.roundtrip import latest_version
from support.tidemark import Job
from support.write_checks import row_id_problems, spark_row_ids

AFTER_PURGE = pa.Table.from_pylist([{**order(i, 6), "local_at": local_at(i, 6)} for i in (1, 17, 25, 36)], schema=LOCAL)
# 0-4: merges; 5: optimize --purge; 6: a merge; 7: optimize
VERSIONS = list(range(8))
OPTIMIZED = {5: ["--purge"], 7: []}
FILTERS = {f"{column} {kind}": (column, kind) for column in ("id", "amount", "at", "local_at") for kind in KINDS}


def optimize(job: Job, *flags: str) -> int:
    report = job.cli_json("optimize", "--job", job.name, *flags)
    version = latest_version(job.table)
    assert report.get("status", "optimized") in ("optimized", "succeeded"), report
    job.reports[version] = {"inserted": 0, "updated": 0, "deleted": 0, **report}
    job.snapshots[version] = job.show()
    return version


def build(root, _) -> Job:
    target = {
        "key": ["id"],
        "orderBy": "seq",
        "deleteWhen": "op = 'D'",
        "maxRowsPerFile": 10,
        "rewriteFilesBelow": 0,
        "tableProperties": {"delta.enableRowTracking": True, "delta.enableInCommitTimestamps": True},
    }
    # A naive Parquet timestamp is taken as UTC (a `timestamp`) unless declared timestamp_ntz.
    j = Job(root, "maintained", target, source={"columns": {"local_at": "timestamp_ntz"}})
    for step in local_steps():
        j.load(step)
    assert optimize(j, "--purge") == 5
    assert not [a for a in delta_log.live_files(j.table) if a.get("deletionVector")], "optimize --purge left a file with a vector"
    j.load(AFTER_PURGE)
    assert [a for a in delta_log.live_files(j.table) if a.get("deletionVector")], "the merge after the purge wrote no vector"
    assert optimize(j) == 7
    assert sorted(j.snapshots) == VERSIONS
    assert delta_log.column_types(j.table)["local_at"] == "timestamp_ntz"
    assert "timestampNtz" in delta_log.protocol(j.table)["readerFeatures"]
    for v in OPTIMIZED:
        assert all(not a["add"]["dataChange"] for a in j.log_entries(v) if "add" in a), f"version {v}: optimize changed data"
    # The commit files' modification times a day later than their in-commit timestamps (as after
    # a copy of the table): a reader that time travels by file times reads the wrong version.
    for v in VERSIONS:
        later = _ict(j, v).timestamp() + 86_400
        os.utime(j.table / "_delta_log" / f"{v:020d}.json", (later, later))
    return j


def _ict(job: Job, version: int) -> dt.datetime:
    first = job.log_entries(version)[0]
    assert "inCommitTimestamp" in first.get("commitInfo", {}), f"version {version}: commitInfo with inCommitTimestamp is not the first action"
    return dt.datetime.fromtimestamp(first["commitInfo"]["inCommitTimestamp"] / 1000, tz=dt.timezone.utc)


def test_spark_history_lists_every_commit_at_its_in_commit_timestamp(spark, job):
    history = {r["version"]: r for r in spark.sql(f"DESCRIBE HISTORY delta.`{job.table}`").collect()}
    assert sorted(history) == VERSIONS
    for v in VERSIONS:
        assert history[v]["timestamp"].replace(tzinfo=dt.timezone.utc) == _ict(job, v), (v, history[v]["timestamp"], _ict(job, v))
        want = "OPTIMIZE" if v in OPTIMIZED else "CREATE TABLE AS SELECT" if v == 0 else "MERGE"
        assert history[v]["operation"] == want, (v, history[v]["operation"])
    stamps = [_ict(job, v) for v in VERSIONS]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps), stamps


def _moments(job: Job):
    """(version, moment): each commit's in-commit timestamp, and 1 ms before the next one."""
    for v in VERSIONS:
        yield v, _ict(job, v)
        if v + 1 in VERSIONS:
            yield v, _ict(job, v + 1) - dt.timedelta(milliseconds=1)


def test_spark_time_travel_by_timestamp(spark, job):
    """At each commit's in-commit timestamp, and 1 ms before the next, Spark reads the rows
    tidemark showed after that commit (the files' times are a day off: it uses the stamps)."""
    problems = []
    for v, at in _moments(job):
        text = at.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
        rows = [r.asDict(recursive=True) for r in spark.read.format("delta").option("timestampAsOf", text).load(str(job.table)).collect()]
        types = types_at(job, v)
        problem = diff(canon_rows(job.snapshots[v], types), canon_rows(rows, types))
        if problem:
            problems.append(f"timestampAsOf {text} (version {v}): {problem}")
    assert not problems, "\n".join(problems)


def test_deltars_and_polars_time_travel_by_file_times_not_in_commit_timestamps(job):
    """delta-rs 1.6.6 (load_as_version(datetime)) and Polars 2.1 (scan_delta(version=datetime))
    pick the version by the commit files' modification times: a day after every in-commit
    timestamp here, so at each of them they read version 0. When a release follows the stamps,
    this fails: assert the right version as for Spark and update docs/compatibility.md."""
    from deltalake import DeltaTable
    import polars as pl

    first = canon_rows(job.snapshots[0], types_at(job, 0))
    problems = []
    for v, at in _moments(job):
        table = DeltaTable(str(job.table))
        table.load_as_version(at)
        if table.version() != 0:
            problems.append(f"delta-rs at {at.isoformat()} (version {v}'s stamp): version {table.version()}")
        rows = pl.scan_delta(str(job.table), version=at).collect().to_dicts()
        if diff(first, canon_rows(rows, types_at(job, 0))):
            problems.append(f"polars at {at.isoformat()} (version {v}'s stamp): not the rows of version 0")
    assert not problems, "\n".join(problems[:6])


def test_spark_row_ids_unique_and_stable(spark, job):
    """Spark's _metadata.row_id at every version: unique; a row that stays keeps its id through
    merges (updated rows too) and both optimizes; an unchanged row keeps its commit version."""
    previous = None
    problems = []
    for v in VERSIONS:
        now = spark_row_ids(spark, job.table, v)
        types = types_at(job, v)
        before = canon_rows(job.snapshots[v - 1], types_at(job, v - 1)) if v else []
        after = canon_rows(job.snapshots[v], types)
        problems += [f"version {v}: {p}" for p in row_id_problems(previous, now, before, after, range(v, v + 1))]
        previous = now
    assert not problems, "\n".join(problems[:20])
