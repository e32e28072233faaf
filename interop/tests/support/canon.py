"""One form for a value, whichever engine read it: each engine hands back Python values of its
own kind (Spark Rows and naive datetimes, Arrow's tz-aware datetimes and map tuples, Polars'
dicts, tidemark show's JSON with BIGINT, DECIMAL and timestamps as text). Canonical forms follow
the column's Delta type: integers as int, decimals as text at the column's scale, floats as
repr (NaN and infinities spelled), dates as ISO text, timestamps as microseconds since the epoch
(UTC), structs as dicts, arrays as lists, maps as key-sorted pairs."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import struct
from collections import Counter
from decimal import Context, Decimal
from typing import Any, Iterable, Mapping

from .delta_log import DeltaType

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
# decimal(38, s) needs more than the default 28 digits
DECIMALS = Context(prec=80)
_INTEGERS = {"byte", "short", "integer", "long"}
_DECIMAL = re.compile(r"^decimal\((\d+),\s*(\d+)\)$")
# tidemark show (DuckDB) spells timestamps "2025-01-01 12:00:00.123456+00"
_TIMESTAMP_TEXT = re.compile(r"^(-?\d{4,})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:([+-])(\d\d)(?::?(\d\d))?|Z)?$")


def decimal_scale(dtype: str) -> tuple[int, int] | None:
    m = _DECIMAL.match(dtype)
    return (int(m.group(1)), int(m.group(2))) if m else None


def micros(value: Any) -> int:
    """Microseconds since the epoch of a datetime (naive: taken as UTC) or a timestamp text."""
    if isinstance(value, str):
        m = _TIMESTAMP_TEXT.match(value)
        if not m:
            raise ValueError(f"not a timestamp text: {value!r}")
        y, mo, d, h, mi, s, frac, sign, oh, om = m.groups()
        base = dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s), int((frac or "0").ljust(6, "0")), tzinfo=dt.timezone.utc)
        if sign:
            offset = dt.timedelta(hours=int(oh), minutes=int(om or 0))
            base -= offset if sign == "+" else -offset
        value = base
    if not isinstance(value, dt.datetime):
        raise TypeError(f"not a timestamp: {value!r}")
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return (value - EPOCH) // dt.timedelta(microseconds=1)


def _float(value: Any, single: bool) -> str:
    x = float(value)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if single:
        x = struct.unpack("<f", struct.pack("<f", x))[0]
    return repr(x)


def _pairs(value: Any) -> Iterable[tuple[Any, Any]]:
    if isinstance(value, Mapping):
        return value.items()
    out = []
    for entry in value:
        if isinstance(entry, Mapping):
            out.append((entry["key"], entry["value"]))
        else:
            k, v = entry
            out.append((k, v))
    return out


def canon(value: Any, dtype: DeltaType) -> Any:
    if value is None:
        return None
    if isinstance(dtype, dict):
        kind = dtype["type"]
        if kind == "struct":
            get = value.get if isinstance(value, Mapping) else value.asDict().get
            return {f["name"]: canon(get(f["name"]), f["type"]) for f in dtype["fields"]}
        if kind == "array":
            return [canon(e, dtype["elementType"]) for e in value]
        if kind == "map":
            pairs = [[canon(k, dtype["keyType"]), canon(v, dtype["valueType"])] for k, v in _pairs(value)]
            return sorted(pairs, key=lambda p: json.dumps(p, sort_keys=True))
        raise ValueError(f"unknown Delta type {dtype!r}")
    if dtype in _INTEGERS:
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise TypeError(f"not an integer: {value!r}")
        return int(value)
    if dtype in ("float", "double"):
        return _float(value, dtype == "float")
    if dtype == "string":
        if not isinstance(value, str):
            raise TypeError(f"not a string: {value!r}")
        return value
    if dtype == "boolean":
        if not isinstance(value, bool):
            raise TypeError(f"not a boolean: {value!r}")
        return value
    if dtype == "date":
        if isinstance(value, dt.datetime):
            raise TypeError(f"a datetime where a date belongs: {value!r}")
        text = value.isoformat() if isinstance(value, dt.date) else str(value)
        if not re.match(r"^-?\d{4,}-\d\d-\d\d$", text):
            raise ValueError(f"not a date: {value!r}")
        return text
    if dtype in ("timestamp", "timestamp_ntz"):
        return micros(value)
    if dtype == "binary":
        if isinstance(value, str):  # DuckDB's text of a BLOB: printable ASCII, else \\xHH
            value = re.sub(rb"\\x([0-9A-Fa-f]{2})", lambda m: bytes([int(m.group(1), 16)]), value.encode("latin-1"))
        return bytes(value).hex()
    scale = decimal_scale(dtype)
    if scale:
        return str(Decimal(str(value)).quantize(Decimal(1).scaleb(-scale[1]), context=DECIMALS))
    raise ValueError(f"unknown Delta type {dtype!r}")


def canon_rows(rows: Iterable[Mapping[str, Any]], types: Mapping[str, DeltaType]) -> list[dict[str, Any]]:
    """Rows in canonical form; a column the schema lacks, or a missing one, is an error."""
    out = []
    for row in rows:
        extra = set(row) - set(types)
        missing = set(types) - set(row)
        if extra or missing:
            raise AssertionError(f"columns differ from the table schema: extra {sorted(extra)}, missing {sorted(missing)}")
        out.append({name: canon(row[name], t) for name, t in types.items()})
    return out


def row_key(row: Mapping[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, ensure_ascii=False)


def diff(expected: list[dict[str, Any]], actual: list[dict[str, Any]], limit: int = 5) -> str | None:
    """None when both hold the same rows (as multisets), else what differs."""
    want, got = Counter(map(row_key, expected)), Counter(map(row_key, actual))
    if want == got:
        return None
    missing = list((want - got).elements())
    extra = list((got - want).elements())
    lines = [f"{len(expected)} rows expected, {len(actual)} read; {len(missing)} missing, {len(extra)} unexpected"]
    lines += [f"  missing:    {r}" for r in missing[:limit]]
    lines += [f"  unexpected: {r}" for r in extra[:limit]]
    return "\n".join(lines)
