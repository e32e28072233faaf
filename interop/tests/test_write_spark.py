"""The write matrix, tables Spark creates: tidemark MERGEs into them (inserts, updates, a delete,
a stale row, a new column), then Spark MERGEs, OPTIMIZEs and VACUUMs (RETAIN 0 HOURS), three
rounds; after every step tidemark, Spark and delta-rs read the same rows, the rows the writers
were asked for (support/roundtrip.py), plus each table's feature checks
(support/write_checks.py). Tables with a feature tidemark does not write are refused by name
before anything is written."""

from __future__ import annotations

import pyarrow as pa
import pytest

from support import delta_log
from support.data import ORDERS, local_at, order
from support.other_writers import SparkWriter
from support.roundtrip import RoundTrip, Scenario, refuse_feature
from support.tidemark import Job
from support import write_checks as checks

DV = {"delta.enableDeletionVectors": "true"}



def too_long_customer(rt: RoundTrip) -> None:
    """A row breaking Spark's CHECK constraint is refused naming it; nothing is written."""
    bad = rt.row(3, 150)
    bad["customer"] = "x" * 25
    rt.refuse([rt.row(1, 150), bad], r"customer_short")


def spark(properties, clauses: str = "", constraints=None, columns=None):
    return lambda session, work: SparkWriter(session, work, properties, clauses, constraints, columns)


SCENARIOS = {
    # deletion vectors, column mapping by name, the change feed, a CHECK constraint, NOT NULL,
    # timestamp_ntz; new columns whose names need mapping
    "spark_dv_name_cdf_check": Scenario(
        "spark_dv_name_cdf_check",
        spark(
            {**DV, "delta.columnMapping.mode": "name", "delta.enableChangeDataFeed": "true"},
            constraints={"customer_short": "customer IS NULL OR length(customer) < 20"},
            columns={"id": "NOT NULL"},
        ),
        extra={"local_at": (pa.timestamp("us"), local_at)},
        new_column=lambda r: f"note {r}.x",
        checks=[checks.change_feed],
        refusal=too_long_customer,
    ),
    # deletion vectors, column mapping by id, row tracking, in-commit timestamps, V2 checkpoints
    # every other commit, liquid clustering by id
    "spark_dv_id_rows_ict_v2_clustered": Scenario(
        "spark_dv_id_rows_ict_v2_clustered",
        spark(
            {
                **DV,
                "delta.columnMapping.mode": "id",
                "delta.enableRowTracking": "true",
                "delta.enableInCommitTimestamps": "true",
                "delta.checkpointPolicy": "v2",
                "delta.checkpointInterval": "2",
            },
            clauses="CLUSTER BY (id)",
        ),
        checks=[checks.row_tracking, checks.in_commit_timestamps, checks.v2_checkpoints, checks.clustering_domain],
    ),
}


TABLES = list(SCENARIOS)


def build(root, name: str, spark) -> RoundTrip:
    rt = RoundTrip(root, SCENARIOS[name], spark)
    rt.run(rounds=3)
    return rt


def test_three_rounds_read_the_same_everywhere(roundtrip):
    """Every step was checked as it ran (roundtrip.run); here: all of them ran."""
    assert len(roundtrip.history) == 1 + 3 * 4, roundtrip.steps
    assert any("tidemark" in name and vs for name, vs, _ in roundtrip.history)


def test_tidemark_kept_the_tables_features(roundtrip):
    """tidemark's commits kept what Spark set up: protocol features and properties (tidemark adds
    only domainMetadata), the constraint, the column mapping of the new columns."""
    meta = delta_log.metadata(roundtrip.table)
    proto = delta_log.protocol(roundtrip.table)
    first = delta_log.metadata(roundtrip.table, 0)
    for key, value in first["configuration"].items():
        if key != "delta.columnMapping.maxColumnId":
            assert meta["configuration"].get(key) == value, (key, meta["configuration"].get(key), value)
    mode = meta["configuration"].get("delta.columnMapping.mode")
    if mode:
        fields = {f["name"]: f for f in delta_log.schema(roundtrip.table)["fields"]}
        for name in roundtrip.new_columns:
            md = fields[name]["metadata"]
            assert md["delta.columnMapping.physicalName"] != name or mode == "id", md
            assert "delta.columnMapping.id" in md, md
        ids = [f["metadata"]["delta.columnMapping.id"] for f in fields.values()]
        assert len(set(ids)) == len(ids) and int(meta["configuration"]["delta.columnMapping.maxColumnId"]) >= max(ids)
    assert "domainMetadata" in proto.get("writerFeatures", [])
    if meta["configuration"].get("delta.checkpointPolicy") == "v2":
        assert checks.tidemark_wrote_a_v2_checkpoint(roundtrip), "no V2 checkpoint at a version tidemark committed"


@pytest.mark.parametrize(
    "feature,column,dtype,definition",
    [
        ("identityColumns", "surrogate", pa.int64(), "GENERATED ALWAYS AS IDENTITY"),
        ("generatedColumns", "day_year", pa.int32(), "GENERATED ALWAYS AS (year(day))"),
    ],
)
def test_refused_before_anything_is_written(spark, tmp_path, feature, column, dtype, definition):
    """A table with an identity or a generated column: tidemark's first run is refused naming the
    feature, and neither a version nor a file is written."""
    writer = SparkWriter(spark, tmp_path / "other-input", {}, columns={column: definition})
    job = Job(tmp_path, f"refused_{feature}", {"key": ["id"], "orderBy": "seq"})
    writer.create(job.table, [order(i, 1) for i in (1, 2, 3)], pa.schema([*ORDERS, (column, dtype)]))
    assert feature in delta_log.protocol(job.table).get("writerFeatures", []), delta_log.protocol(job.table)
    refuse_feature(job, pa.Table.from_pylist([order(i, 2) for i in (1, 4)], schema=ORDERS), feature)
