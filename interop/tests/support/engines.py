"""The readers under test, each through its ordinary public API: Spark with Delta Lake
(`spark.read.format("delta")`), delta-rs (`deltalake`: a DeltaTable queried through its
DataFusion QueryBuilder) and Polars (`scan_delta`). Each returns plain Python rows; canon.py
makes them comparable."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any, Callable, Mapping

from .delta_log import DeltaType
from .filters import Filter, to_polars, to_spark, to_sql

Rows = list[dict[str, Any]]


# One read: the table at a version (None: the latest) through a filter (None: every row), with
# the column types of that version.
Request = tuple[int | None, Filter | None, Mapping[str, DeltaType]]


@dataclass
class Engine:
    name: str
    version: str
    read: Callable[[Path, int | None, Filter | None, Mapping[str, DeltaType]], Rows]

    def __str__(self) -> str:
        return f"{self.name} {self.version}"

    def read_all(self, table: Path, requests: list[Request]) -> list[Rows | Exception]:
        """Rows per request, one read after the other (for Spark, a union of the reads in one
        job took half as long again for the types table: 152 s against 107 s); a request that
        failed gets its exception."""
        out: list[Rows | Exception] = []
        for v, f, t in requests:
            try:
                out.append(self.read(table, v, f, t))
            except Exception as err:  # noqa: BLE001
                out.append(err)
        return out


def spark_engine(spark) -> Engine:
    def frame(table: Path, version: int | None, where: Filter | None):
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        df = reader.load(str(table))
        return df if where is None else df.filter(to_spark(where))

    def read(table: Path, version: int | None, where: Filter | None, types: Mapping[str, DeltaType]) -> Rows:
        return [r.asDict(recursive=True) for r in frame(table, version, where).collect()]

    return Engine("spark", f"Spark {spark.version}, delta-spark {dist_version('delta-spark')}", read)


def deltalake_engine() -> Engine:
    from deltalake import DeltaTable, QueryBuilder
    import pyarrow as pa

    def read(table: Path, version: int | None, where: Filter | None, types: Mapping[str, DeltaType]) -> Rows:
        dt = DeltaTable(str(table), version=version)
        sql = "SELECT * FROM t" + (f" WHERE {to_sql(where, types)}" if where is not None else "")
        return pa.table(QueryBuilder().register("t", dt).execute(sql).read_all()).to_pylist()

    return Engine("deltalake", f"deltalake {dist_version('deltalake')}", read)


def polars_engine() -> Engine:
    import polars as pl

    def read(table: Path, version: int | None, where: Filter | None, types: Mapping[str, DeltaType]) -> Rows:
        lf = pl.scan_delta(str(table), version=version)
        if where is not None:
            lf = lf.filter(to_polars(where))
        return lf.collect().to_dicts()

    return Engine("polars", f"polars {pl.__version__}", read)
