"""A merge table with deletion vectors after `tidemark optimize` and `tidemark vacuum` (retention
0: every file the latest version does not need is deleted): the read matrix at the latest
version, and Spark's and delta-rs's own VACUUM DRY RUN find nothing more to delete (delta-rs lists the files already gone), while every
file the log lists is still there."""

from __future__ import annotations

from urllib.parse import unquote

from support import delta_log
from support.checks import KINDS
from support.data import small_steps
from support.matrix import (  # noqa: F401 (the read matrix's tests)
    test_filtered_read_keeps_every_matching_row,
    test_rows_are_what_the_source_files_say,
    test_rows_equal_tidemark_show,
    test_spark_detail_agrees_with_the_log_and_status,
    test_statistics_bound_every_file,
)
from support.roundtrip import data_files, latest_version
from support.tidemark import Job

STEPS = small_steps(4)
# the optimize after four merges; older versions lost their files to the vacuum
VERSIONS = [len(STEPS)]
FILTERS = {f"{column} {kind}": (column, kind) for column in ("id", "seq", "amount", "at") for kind in KINDS}


def build(root, _) -> Job:
    target = {"key": ["id"], "orderBy": "seq", "maxRowsPerFile": 2, "rewriteFilesBelow": 0}
    j = Job(root, "vacuumed", target)
    for step in STEPS:
        j.load(step)
    j.cli_json("optimize", "--job", j.name, "--purge")
    version = latest_version(j.table)
    assert version == VERSIONS[0]
    j.snapshots[version] = j.show()
    before = data_files(j.table)
    report = j.cli_json("vacuum", "--job", j.name, "--retain", "0h", "--unsafe-allow-short-retention")
    gone = before - data_files(j.table)
    assert gone and report, f"vacuum deleted nothing: {report}"
    j.vacuumed = gone  # type: ignore[attr-defined]
    return j


def test_vacuum_kept_every_live_file_and_left_nothing_for_spark_or_delta_rs(spark, job):
    from deltalake import DeltaTable

    live = {unquote(a["path"]) for a in delta_log.live_files(job.table)}
    vectors = {a["deletionVector"]["pathOrInlineDv"] for a in delta_log.live_files(job.table) if a.get("deletionVector")}
    present = data_files(job.table)
    assert live <= present, f"vacuum deleted live files: {sorted(live - present)}"
    assert not vectors, "optimize --purge left a deletion vector"
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    spark_would = [r[0] for r in spark.sql(f"VACUUM delta.`{job.table}` RETAIN 0 HOURS DRY RUN").collect()]
    assert spark_would == [], f"Spark's VACUUM would still delete {spark_would[:5]}"
    # delta-rs lists the log's expired removes, whether the files are still there or not
    rs_would = DeltaTable(str(job.table)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=True)
    still_there = [p for p in rs_would if (job.table / unquote(p)).exists()]
    assert rs_would and still_there == [], f"delta-rs's vacuum would still delete {still_there[:5]}"
