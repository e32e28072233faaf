"""Merge tables as tidemark writes them, read by Spark, delta-rs and Polars: with deletion vectors
(the default; several per file, some rewritten) and with `deletionVectors: false` (files
rewritten). Five commits: inserts, updates over every file, updates of rows whose file already
has a vector, deletes and a stale row, more updates."""

from __future__ import annotations

import pytest

from conftest import ENGINES
from support import delta_log
from support.checks import KINDS, Reads, assert_filtered, assert_rows_at, assert_spark_detail, assert_spark_history, both, filter_for
from support.data import ORDERS, merge_steps
from support.filters import Cmp, IsNull
from support.stats import check_file_stats
from support.tidemark import Job

STEPS = merge_steps()
VERSIONS = list(range(len(STEPS)))
SCENARIOS = {
    # rewriteFilesBelow 0: the files here are tiny, and would be rewritten rather than get a vector
    "merge_dv": {"deletionVectors": True, "rewriteFilesBelow": 0},
    "merge_no_dv": {"deletionVectors": False},
}


@pytest.fixture(scope="module", params=list(SCENARIOS))
def job(request, tmp_path_factory) -> Job:
    name = request.param
    target = {"key": ["id"], "orderBy": "seq", "deleteWhen": "op = 'D'", "maxRowsPerFile": 10, **SCENARIOS[name]}
    j = Job(tmp_path_factory.mktemp(name), name, target)
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


@pytest.fixture(scope="module")
def reads(job, engines) -> dict[str, Reads]:
    filters = {name: f if not isinstance(f, tuple) else filter_for(job, *f) for name, f in FILTERS.items()}
    return {name: Reads(engines, name, job, VERSIONS, filters) for name in ENGINES}


@pytest.mark.parametrize("version", [*VERSIONS, None], ids=[*map(str, VERSIONS), "latest"])
@pytest.mark.parametrize("engine", ENGINES)
def test_rows_equal_tidemark_show(reads, engine, version):
    assert_rows_at(reads[engine], version)


@pytest.mark.parametrize("name", list(FILTERS))
@pytest.mark.parametrize("engine", ENGINES)
def test_filtered_read_keeps_every_matching_row(reads, engine, name):
    assert_filtered(reads[engine], name)


@pytest.mark.parametrize("version", VERSIONS)
def test_statistics_bound_every_file(job, version):
    assert check_file_stats(job, version) == []


def test_spark_history_counts_what_each_commit_did(spark, job):
    assert_spark_history(spark, job, ["id"])


def test_spark_detail_agrees_with_the_log_and_status(spark, job):
    assert_spark_detail(spark, job)
