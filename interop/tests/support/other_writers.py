"""The other writers of the write matrix, through their ordinary public APIs: Spark SQL with
Delta Lake (CREATE TABLE, MERGE INTO, OPTIMIZE, VACUUM) and delta-rs (write_deltalake,
DeltaTable.merge, optimize.compact, vacuum)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa

from .roundtrip import Row, merge_sql, parquet_input, sql_name


def spark_type(t: pa.DataType) -> str:
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_int32(t):
        return "INT"
    if pa.types.is_string(t):
        return "STRING"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_date32(t):
        return "DATE"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP" if t.tz else "TIMESTAMP_NTZ"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_float64(t):
        return "DOUBLE"
    raise TypeError(f"no Spark type for {t}")


class SparkWriter:
    """Spark creates the table and is the other writer. `columns` are the table's DDL additions
    per column name (`NOT NULL`, `GENERATED ...`), `clauses` what comes after USING DELTA."""

    name = "Spark"
    # Round trips run side by side in one Spark session (support/ahead.py): each writer's
    # temporary views have names of their own.
    _writers = itertools.count(1)

    def __init__(self, spark, work: Path, properties: Mapping[str, Any], clauses: str = "", constraints: Mapping[str, str] | None = None, columns: Mapping[str, str] | None = None):
        self.spark, self.work = spark, work
        self.views = f"writer{next(self._writers)}"
        self.properties, self.clauses = dict(properties), clauses
        self.constraints, self.columns = dict(constraints or {}), dict(columns or {})

    def _view(self, rows: list[Row], schema: pa.Schema, name: str) -> str:
        path = parquet_input(self.work, rows, schema)
        view = f"{name}_{self.views}"
        self.spark.read.parquet(str(path)).createOrReplaceTempView(view)
        return view

    def create_sql(self, path: Path, schema: pa.Schema) -> str:
        cols = ", ".join(f"{sql_name(f.name)} {spark_type(f.type)} {self.columns.get(f.name, '')}".rstrip() for f in schema)
        props = ", ".join(f"'{k}' = '{v}'" for k, v in self.properties.items())
        return f"CREATE TABLE delta.`{path}` ({cols}) USING DELTA {self.clauses}" + (f" TBLPROPERTIES ({props})" if props else "")

    def create(self, path: Path, rows: list[Row], schema: pa.Schema) -> None:
        self.spark.sql(self.create_sql(path, schema))
        for name, expr in self.constraints.items():
            self.spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT {name} CHECK ({expr})")
        view = self._view(rows, schema, "initial_rows")
        names = ", ".join(sql_name(f.name) for f in schema if "GENERATED" not in self.columns.get(f.name, ""))
        self.spark.sql(f"INSERT INTO delta.`{path}` ({names}) SELECT {names} FROM {view}")

    def merge(self, path: Path, rows: list[Row], schema: pa.Schema) -> None:
        view = self._view(rows, schema, "merge_rows")
        self.spark.sql(merge_sql(f"delta.`{path}`", view, schema.names))

    def optimize(self, path: Path) -> None:
        self.spark.sql(f"OPTIMIZE delta.`{path}`")

    def vacuum(self, path: Path) -> None:
        # RETAIN 0 HOURS: every file the latest version does not need goes, now
        self.spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
        self.spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS")


class DeltaRsWriter:
    """delta-rs creates the table (write_deltalake) and is the other writer."""

    name = "delta-rs"

    def __init__(self, configuration: Mapping[str, str] | None = None):
        self.configuration = dict(configuration or {})

    def create(self, path: Path, rows: list[Row], schema: pa.Schema) -> None:
        from deltalake import write_deltalake

        write_deltalake(str(path), pa.Table.from_pylist(rows, schema=schema), configuration=self.configuration or None)

    def merge(self, path: Path, rows: list[Row], schema: pa.Schema) -> None:
        from deltalake import DeltaTable

        cols = {f"`{c}`": f"s.`{c}`" for c in schema.names}
        (
            DeltaTable(str(path))
            .merge(pa.Table.from_pylist(rows, schema=schema), predicate="t.id = s.id", source_alias="s", target_alias="t")
            .when_matched_delete(predicate="s.op = 'D'")
            .when_matched_update(updates=cols, predicate="s.seq > t.seq")
            .when_not_matched_insert(updates=cols, predicate="s.op <> 'D'")
            .execute()
        )

    def optimize(self, path: Path) -> None:
        from deltalake import DeltaTable

        DeltaTable(str(path)).optimize.compact()

    def vacuum(self, path: Path) -> None:
        from deltalake import DeltaTable

        DeltaTable(str(path)).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)



class CreatedByDeltaRs(SparkWriter):
    """delta-rs creates the table (write_deltalake), Spark is the other writer: delta-rs 1.6
    cannot write it once tidemark has (test_write_deltars.py)."""

    creator = "delta-rs"

    def __init__(self, spark, work: Path):
        super().__init__(spark, work, {})

    def create(self, path: Path, rows: list[Row], schema: pa.Schema) -> None:
        DeltaRsWriter().create(path, rows, schema)
