"""The checks every table kind gets, for one engine: rows at a version equal tidemark's, and a
filtered read keeps exactly the rows the unfiltered read passes through the same filter."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal
from typing import Any, Mapping

from . import delta_log
from .canon import EPOCH, canon_rows, decimal_scale, diff, row_key
from .delta_log import DeltaType
from .engines import Engine
from .filters import All, Cmp, Filter, IsNull, describe, matches, ordered
from .tidemark import Job


def types_at(job: Job, version: int | None) -> dict[str, DeltaType]:
    return delta_log.column_types(job.table, version)


class Reads:
    """Every read one engine makes of one table, made together on first use: the table at each
    version, and at the latest version through each named filter."""

    def __init__(self, engines: Mapping[str, Engine], name: str, job: Job, versions: list[int], filters: Mapping[str, Filter]):
        self.engines, self.name, self.job, self.versions, self.filters = engines, name, job, versions, dict(filters)
        self._rows: dict[Any, list[dict[str, Any]]] | None = None

    @property
    def engine(self) -> Engine:
        return self.engines[self.name]  # made on first use: Spark only when a Spark test runs

    def _load(self) -> dict[Any, list[dict[str, Any]]]:
        if self._rows is None:
            latest = types_at(self.job, None)
            keys: list[Any] = [*self.versions, None, *(("where", n) for n in self.filters)]
            requests = [(v, None, types_at(self.job, v)) for v in self.versions]
            requests.append((None, None, latest))
            requests += [(None, f, latest) for f in self.filters.values()]
            results = self.engine.read_all(self.job.table, requests)
            self._rows = {k: rows if isinstance(rows, Exception) else canon_rows(rows, req[2]) for k, rows, req in zip(keys, results, requests)}
        return self._rows

    def _get(self, key: Any) -> list[dict[str, Any]]:
        rows = self._load()[key]
        if isinstance(rows, Exception):
            raise rows
        return rows

    def at(self, version: int | None) -> list[dict[str, Any]]:
        return self._get(version)

    def where(self, name: str) -> list[dict[str, Any]]:
        return self._get(("where", name))


def assert_rows_at(reads: Reads, version: int | None) -> None:
    """The engine reads, at `version` (None: the latest, by default), exactly the rows `tidemark
    show` returned right after that commit."""
    job = reads.job
    at = job.latest if version is None else version
    expected = canon_rows(job.snapshots[at], types_at(job, at))
    problem = diff(expected, reads.at(version))
    assert problem is None, f"{reads.engine} at version {at} ({'latest' if version is None else 'versionAsOf'}) vs tidemark show:\n{problem}"


def assert_filtered(reads: Reads, name: str) -> None:
    """A filtered read returns exactly the rows of an unfiltered read that pass the filter (the
    engine may skip files by their statistics: never one that holds a matching row)."""
    job, where = reads.job, reads.filters[name]
    types = types_at(job, None)
    everything = reads.at(None)
    # The unfiltered read is checked against tidemark elsewhere; it must agree here too, or the
    # expectation would be built on sand.
    assert diff(canon_rows(job.snapshots[job.latest], types), everything) is None, f"{reads.engine}: unfiltered read differs from tidemark show"
    expected = [r for r in everything if matches(where, r, types)]
    problem = diff(expected, reads.where(name))
    assert problem is None, f"{reads.engine} WHERE {describe(where)}:\n{problem}"


LINEAGE = ("_source_file", "_source_modified")


def expected_from_source(job: Job) -> list[dict[str, Any]]:
    """The table's rows as the landed files say they should be, worked out here without
    tidemark: every row (append), or per key the row with the greatest orderBy value, a later
    file winning a tie, gone when that row matches deleteWhen (only `op = 'D'` is understood)."""
    rows = [r for table in job.landed for r in table.to_pylist()]
    if job.key is None:
        return rows
    order_by, delete_when = job.target["orderBy"], job.target.get("deleteWhen")
    assert delete_when in (None, "op = 'D'"), f"expected_from_source does not understand deleteWhen {delete_when!r}"
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        k = tuple(r[c] for c in job.key)
        if k not in latest or r[order_by] >= latest[k][order_by]:
            latest[k] = r
    return [r for r in latest.values() if not (delete_when and r["op"] == "D")]


def assert_rows_are_source_rows(reads: Reads) -> None:
    """The engine's rows at the latest version, lineage columns aside, are the source files'
    rows value for value (independent of tidemark's own reading)."""
    job = reads.job
    types = {c: t for c, t in types_at(job, None).items() if c not in LINEAGE}
    expected = canon_rows(({c: r.get(c) for c in types} for r in expected_from_source(job)), types)
    actual = [{c: r[c] for c in types} for r in reads.at(None)]
    problem = diff(expected, actual)
    assert problem is None, f"{reads.engine} vs the source files:\n{problem}"


def typed(value: Any, dtype: DeltaType) -> Any:
    """A canonical value back as the Python value a filter compares with."""
    if dtype == "date":
        return dt.date.fromisoformat(value)
    if dtype == "timestamp":
        return EPOCH + dt.timedelta(microseconds=value)
    if dtype == "timestamp_ntz":  # a wall clock: naive (Polars refuses to compare it with a zoned value)
        return (EPOCH + dt.timedelta(microseconds=value)).replace(tzinfo=None)
    if isinstance(dtype, str) and decimal_scale(dtype):
        return Decimal(value)
    if dtype in ("float", "double"):
        return float(value)
    return value


# Filters on each column, resolved against the table's live rows: the edges of its values
# (where a wrong min or max statistic prunes a file that holds the row; `<= min` and `>= max`
# would prune the same files as `= min` and `= max`), a range from the middle, NULLs (a wrong
# nullCount prunes both ways). Each costs Spark a scan (about 0.75 s here).
KINDS = ["=min", "=max", "<mid", "is null", "is not null"]


def filter_for(job: Job, column: str, kind: str) -> Filter:
    """The filter `kind` on `column`, its value taken from the rows tidemark shows at the latest version."""
    types = types_at(job, None)
    t = types[column]
    if kind == "is null":
        return IsNull(column)
    if kind == "is not null":
        return IsNull(column, negate=True)
    rows = canon_rows(job.snapshots[job.latest], types)
    values = sorted({r[column] for r in rows if r[column] is not None and r[column] != "NaN"}, key=lambda v: ordered(v, t))
    assert values, f"{column}: no values to filter on"
    pick = {"=min": values[0], "=max": values[-1], "<mid": values[len(values) // 2]}[kind]
    op = {"=min": "=", "=max": "=", "<mid": "<"}[kind]
    return Cmp(column, op, typed(pick, t))


def both(*parts: Filter) -> Filter:
    return All(tuple(parts))


def changes(job: Job, key: list[str] | None, version: int) -> dict[str, list[dict[str, Any]]]:
    """What commit `version` did to the rows, from tidemark show before and after it: rows
    inserted, deleted, and (with a key) updated: the same key with other values, as pre- and
    post-images. Without a key (append tables) rows are compared whole."""
    types = types_at(job, version)
    after_rows = canon_rows(job.snapshots[version], types)
    before_rows = [] if version == 0 else canon_rows(job.snapshots[version - 1], types_at(job, version - 1))
    # a column added by this commit reads as NULL in the rows before it
    before_rows = [{c: r.get(c) for c in types} for r in before_rows]
    if key is None:
        after, before = Counter(map(row_key, after_rows)), Counter(map(row_key, before_rows))
        back = {row_key(r): r for r in [*after_rows, *before_rows]}
        return {
            "insert": [back[k] for k in (after - before).elements()],
            "delete": [back[k] for k in (before - after).elements()],
            "update_preimage": [],
            "update_postimage": [],
        }
    after_by = {tuple(r[k] for k in key): r for r in after_rows}
    before_by = {tuple(r[k] for k in key): r for r in before_rows}
    updated = [k for k, r in after_by.items() if k in before_by and before_by[k] != r]
    return {
        "insert": [r for k, r in after_by.items() if k not in before_by],
        "delete": [r for k, r in before_by.items() if k not in after_by],
        "update_preimage": [before_by[k] for k in updated],
        "update_postimage": [after_by[k] for k in updated],
    }


def assert_spark_history(spark, job: Job, key: list[str] | None) -> None:
    """DESCRIBE HISTORY lists every commit with the operation tidemark recorded, and its row
    counts are what the commit did to the rows (and what the run reported)."""
    history = {r["version"]: r for r in spark.sql(f"DESCRIBE HISTORY delta.`{job.table}`").collect()}
    assert sorted(history) == sorted(job.snapshots), f"DESCRIBE HISTORY versions {sorted(history)}"
    ours = {c["version"]: c for c in job.history()}
    for version in sorted(job.snapshots):
        h, change = history[version], changes(job, key, version)
        assert h["operation"] == ours[version]["operation"], (version, h["operation"], ours[version])
        done = {"inserted": len(change["insert"]), "updated": len(change["update_postimage"]), "deleted": len(change["delete"])}
        metrics = h["operationMetrics"]
        if "numTargetRowsInserted" in metrics:  # MERGE
            spark_says = {k: int(metrics[f"numTargetRows{k.capitalize()}"]) for k in done}
        else:  # an append (WRITE, CREATE TABLE AS SELECT)
            spark_says = {"inserted": int(metrics["numOutputRows"]), "updated": 0, "deleted": 0}
        report = job.reports[version]
        assert spark_says == done, f"version {version}: DESCRIBE HISTORY metrics {spark_says}, the rows changed {done}"
        assert {k: report[k] for k in done} == done, f"version {version}: run report {report}"


def assert_spark_detail(spark, job: Job) -> None:
    """DESCRIBE DETAIL agrees with the log and with tidemark status: files, bytes, partition
    columns, protocol, features, properties."""
    d = spark.sql(f"DESCRIBE DETAIL delta.`{job.table}`").collect()[0].asDict()
    files = delta_log.live_files(job.table)
    meta, proto = delta_log.metadata(job.table), delta_log.protocol(job.table)
    status = job.status()
    assert d["format"] == "delta"
    assert d["numFiles"] == len(files) == status["files"], (d["numFiles"], len(files), status)
    assert d["sizeInBytes"] == sum(f["size"] for f in files) == status["bytes"], (d["sizeInBytes"], status)
    assert list(d["partitionColumns"]) == meta["partitionColumns"]
    assert (d["minReaderVersion"], d["minWriterVersion"]) == (proto["minReaderVersion"], proto["minWriterVersion"])
    assert set(d["tableFeatures"]) >= set(proto.get("readerFeatures", [])) | set(proto.get("writerFeatures", [])), d["tableFeatures"]
    assert dict(d["properties"]) == meta["configuration"]


CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")


def assert_change_feed(job: Job, rows: list[dict[str, Any]], who: str) -> None:
    """A change feed read from version 0 to the latest holds, per commit, exactly what the commit
    did to the rows (tidemark show before and after it): inserts, deletes, pre- and post-images."""
    by_version: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        by_version.setdefault(int(r["_commit_version"]), []).append(r)
    assert set(by_version) <= set(job.snapshots), f"{who}: change feed versions {sorted(by_version)}"
    for version in sorted(job.snapshots):
        types = types_at(job, version)
        want = changes(job, job.key, version)
        got = by_version.get(version, [])
        for kind in ("insert", "delete", "update_preimage", "update_postimage"):
            of_kind = [{c: v for c, v in r.items() if c not in CDF_COLUMNS} for r in got if r["_change_type"] == kind]
            problem = diff(want[kind], canon_rows(of_kind, types))
            assert problem is None, f"{who}: change feed of version {version}, {kind}:\n{problem}"
        unknown = {r["_change_type"] for r in got} - set(want)
        assert not unknown, f"{who}: change types {unknown}"
