"""Filters written once and spoken in each engine's own terms (a Spark Column, DataFusion SQL for
delta-rs, a Polars expression), plus the same test in Python over canonical rows. A filtered
read lets the engine skip files by their statistics and partition values; the rows it returns
must be exactly the rows of an unfiltered read that pass the Python test."""

from __future__ import annotations

import datetime as dt
import operator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Mapping, Union

from .canon import canon, decimal_scale
from .delta_log import DeltaType

_OPS = {"=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


@dataclass(frozen=True)
class Cmp:
    column: str
    op: str  # = < <= > >=
    value: Any  # int, str, bool, Decimal, date, tz-aware datetime


@dataclass(frozen=True)
class IsNull:
    column: str
    negate: bool = False


@dataclass(frozen=True)
class All:
    parts: tuple["Filter", ...]


Filter = Union[Cmp, IsNull, All]


def describe(f: Filter) -> str:
    if isinstance(f, Cmp):
        v = f.value.isoformat() if isinstance(f.value, (dt.date, dt.datetime)) else f.value
        return f"{f.column}{f.op}{v}"
    if isinstance(f, IsNull):
        return f"{f.column} is {'not ' if f.negate else ''}null"
    return " and ".join(describe(p) for p in f.parts)


def ordered(value: Any, dtype: DeltaType) -> Any:
    """A canonical value in a form Python orders as the engines do."""
    if isinstance(dtype, str) and decimal_scale(dtype):
        return Decimal(value)
    if dtype in ("float", "double"):
        return float(value)
    return value


def matches(f: Filter, row: Mapping[str, Any], types: Mapping[str, DeltaType]) -> bool:
    """SQL's answer (NULL is not true) for a canonical row."""
    if isinstance(f, All):
        return all(matches(p, row, types) for p in f.parts)
    if isinstance(f, IsNull):
        return (row[f.column] is None) != f.negate
    value = row[f.column]
    if value is None:
        return False
    t = types[f.column]
    return _OPS[f.op](ordered(value, t), ordered(canon(f.value, t), t))


def to_spark(f: Filter):
    from pyspark.sql import functions as F

    if isinstance(f, All):
        out = to_spark(f.parts[0])
        for p in f.parts[1:]:
            out = out & to_spark(p)
        return out
    col = F.col(f"`{f.column}`")
    if isinstance(f, IsNull):
        return col.isNotNull() if f.negate else col.isNull()
    return _OPS[f.op](col, F.lit(f.value))


def _sql_literal(value: Any, dtype: DeltaType) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"CAST('{value!r}' AS {'FLOAT' if dtype == 'float' else 'DOUBLE'})"
    if isinstance(value, Decimal):
        p, s = decimal_scale(dtype) or (38, max(0, -value.as_tuple().exponent))
        return f"CAST('{value:f}' AS DECIMAL({p},{s}))"
    if isinstance(value, dt.datetime) and value.tzinfo is None:  # timestamp_ntz
        return f"TIMESTAMP '{value:%Y-%m-%dT%H:%M:%S.%f}'"
    if isinstance(value, dt.datetime):
        utc = value.astimezone(dt.timezone.utc)
        return f"TIMESTAMP '{utc:%Y-%m-%dT%H:%M:%S.%f}Z'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise TypeError(f"no SQL literal for {value!r}")


def to_sql(f: Filter, types: Mapping[str, DeltaType]) -> str:
    """DataFusion SQL (delta-rs's QueryBuilder)."""
    if isinstance(f, All):
        return " AND ".join(f"({to_sql(p, types)})" for p in f.parts)
    col = '"' + f.column.replace('"', '""') + '"'
    if isinstance(f, IsNull):
        return f"{col} IS {'NOT ' if f.negate else ''}NULL"
    return f"{col} {f.op} {_sql_literal(f.value, types[f.column])}"


def to_polars(f: Filter):
    import polars as pl

    if isinstance(f, All):
        out = to_polars(f.parts[0])
        for p in f.parts[1:]:
            out = out & to_polars(p)
        return out
    col = pl.col(f.column)
    if isinstance(f, IsNull):
        return col.is_not_null() if f.negate else col.is_null()
    return _OPS[f.op](col, pl.lit(f.value))
