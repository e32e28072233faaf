"""The statistics of every live data file, checked against the file's own rows (read with
pyarrow, deletion vectors ignored: statistics describe every row physically in the file).
Readers trust them to skip files: a min above a value, a max below one, or a wrong null count
makes Spark, Trino or delta-rs return fewer rows than the table holds, without an error.

The rules are the protocol's plus Spark's conventions, which every reader follows: timestamps
are kept to the millisecond (the max rounded down, so readers widen it by 1 ms), and strings are
cut to a prefix with a max that stays an upper bound."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq

from . import delta_log
from .canon import canon, micros
from .filters import ordered
from .tidemark import Job

MS = 1000


def _physical(field: dict[str, Any]) -> str:
    return field.get("metadata", {}).get("delta.columnMapping.physicalName", field["name"])


def _walk(fields: list[dict[str, Any]]):
    """(logical names, physical names, type) of every primitive leaf, through nested structs."""
    for f in fields:
        t = f["type"]
        if isinstance(t, dict) and t["type"] == "struct":
            for logical, physical, leaf in _walk(t["fields"]):
                yield (f["name"], *logical), (_physical(f), *physical), leaf
        elif not isinstance(t, dict):
            yield (f["name"],), (_physical(f),), t


def _dig(stats: dict[str, Any] | None, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(stats, dict) or part not in stats:
            return None
        stats = stats[part]
    return stats


def _column(table, physical: tuple[str, ...]) -> list[Any]:
    col = table.column(physical[0])
    values = col.to_pylist()
    for part in physical[1:]:
        values = [None if v is None else v.get(part) for v in values]
    return values


def check_file_stats(job: Job, version: int | None = None) -> list[str]:
    """Every problem with the statistics of the live files at `version`; empty when sound."""
    meta = delta_log.metadata(job.table, version)
    schema = json.loads(meta["schemaString"])
    partition_columns = set(meta.get("partitionColumns", []))
    problems: list[str] = []
    for add in delta_log.live_files(job.table, version):
        path = add["path"]
        raw = add.get("stats")
        if not raw:
            continue
        stats = json.loads(raw, parse_float=Decimal)
        data = pq.read_table(job.table / unquote(path))  # add.path is a URI-encoded relative path
        if stats.get("numRecords") != data.num_rows:
            problems.append(f"{path}: numRecords {stats.get('numRecords')}, the file has {data.num_rows} rows")
        fields = [f for f in schema["fields"] if f["name"] not in partition_columns]
        for logical, physical, t in _walk(fields):
            name = ".".join(logical)
            values = _column(data, physical) if physical[0] in data.column_names else [None] * data.num_rows
            nulls = sum(v is None for v in values)
            null_count = _dig(stats.get("nullCount"), physical)
            if null_count is not None and null_count != nulls:
                problems.append(f"{path}: {name} nullCount {null_count}, the file has {nulls} NULLs")
            present = [canon(v, t) for v in values if v is not None]
            if t in ("float", "double"):
                present = [v for v in present if v != "NaN"]
            for which in ("minValues", "maxValues"):
                bound = _dig(stats.get(which), physical)
                if bound is None or not present:
                    continue
                problems += _bound_problems(path, name, t, which, bound, present)
    return problems


def _bound_problems(path: str, name: str, t: str, which: str, bound: Any, present: list[Any]) -> list[str]:
    if t in ("timestamp", "timestamp_ntz"):
        b = micros(bound)
        lo, hi = min(present), max(present)
        if which == "minValues" and not b <= lo:
            return [f"{path}: {name} min {bound} ({b} us), the file's least value is {lo} us"]
        if which == "maxValues" and not hi < b + MS:
            return [f"{path}: {name} max {bound} ({b} us), the file's greatest value is {hi} us (readers take max + 1 ms as the bound)"]
        return []
    try:
        b = ordered(canon(bound, t), t)
    except (TypeError, ValueError) as err:
        return [f"{path}: {name} {which} {bound!r} is not a {t}: {err}"]
    values = [ordered(v, t) for v in present]
    lo, hi = min(values), max(values)
    if which == "minValues" and not b <= lo:
        return [f"{path}: {name} min {bound!r} is above the file's least value {lo!r}"]
    if which == "maxValues" and not b >= hi:
        return [f"{path}: {name} max {bound!r} is below the file's greatest value {hi!r}"]
    return []
