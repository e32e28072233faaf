"""The read matrix's tests, the same for every table kind. A test module builds its table in a
module fixture `job` (support.tidemark.Job), says which commits it made (VERSIONS), which
filtered reads to make (FILTERS: a name -> a Filter, or (column, kind) resolved against the
table's rows, see checks.filter_for) and and imports
these functions; conftest.py parametrizes them by engine, version and filter."""

from __future__ import annotations

from .checks import assert_filtered, assert_rows_are_source_rows, assert_rows_at, assert_spark_detail, assert_spark_history
from .stats import check_file_stats


def test_rows_equal_tidemark_show(reads, engine, version):
    """Every row the engine reads at a version (time travel; None: the latest) is what
    tidemark show returned right after that commit."""
    assert_rows_at(reads[engine], version)


def test_rows_are_what_the_source_files_say(reads, engine):
    """The latest rows, worked out from the landed files without tidemark, value for value."""
    assert_rows_are_source_rows(reads[engine])


def test_filtered_read_keeps_every_matching_row(reads, engine, filter_name):
    """Statistics and partition values never make the engine skip a matching row."""
    assert_filtered(reads[engine], filter_name)


def test_statistics_bound_every_file(job, commit):
    """At every version, each live file's min/max/nullCount/numRecords hold for its rows."""
    assert check_file_stats(job, commit) == []


def test_spark_history_counts_what_each_commit_did(spark, job):
    assert_spark_history(spark, job, job.key)


def test_spark_detail_agrees_with_the_log_and_status(spark, job):
    assert_spark_detail(spark, job)
