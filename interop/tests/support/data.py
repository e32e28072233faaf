"""Source rows for the tables: an orders-like schema whose values are a function of (id, seq),
covering what statistics and readers get wrong: NULLs, unicode and quotes, negative decimals,
dates and timestamps before 1970, microseconds, the ends of integer ranges."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, Iterable

import pyarrow as pa

ORDERS = pa.schema(
    [
        ("id", pa.int64()),
        ("seq", pa.int64()),
        ("op", pa.string()),
        ("customer", pa.string()),
        ("amount", pa.decimal128(12, 2)),
        ("qty", pa.int32()),
        ("day", pa.date32()),
        ("at", pa.timestamp("us", tz="UTC")),
        ("active", pa.bool_()),
        ("score", pa.float64()),
    ]
)

_NAMES = ["Ada", "Émile", "o'Brien", "Zoë 李", "  padded ", "a/b=c%d", "", None]
_T0 = dt.datetime(1969, 7, 20, 20, 17, 40, 123456, tzinfo=dt.timezone.utc)


def order(id: int, seq: int, op: str = "U") -> dict[str, Any]:
    """One order row; different `seq` give different values for every column but the key."""
    k = id * 7 + seq * 13
    return {
        "id": id,
        "seq": seq,
        "op": op,
        "customer": _NAMES[k % len(_NAMES)],
        "amount": None if k % 11 == 0 else Decimal(k * 37 % 100_000 - 20_000).scaleb(-2),
        "qty": [-(2**31), 2**31 - 1, 0][id % 3] if id % 10 == 9 else (k % 50 if k % 13 else None),
        "day": None if k % 17 == 0 else dt.date(1968, 12, 25) + dt.timedelta(days=k * 211 % 25_000),
        "at": None if k % 19 == 0 else _T0 + dt.timedelta(seconds=k * 86_413, microseconds=k * 7),
        "active": None if k % 5 == 0 else bool(k % 2),
        "score": None if k % 23 == 0 else (k % 97) / 8 - 5,
    }


def orders(rows: Iterable[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=ORDERS)


def merge_steps() -> list[pa.Table]:
    """Five commits of a merge job keyed by id, versioned by seq, deleting on op = 'D': inserts,
    updates spread over every file, updates again of rows whose files already carry a deletion
    vector (so a vector is rewritten), deletes, a stale row that must lose, more updates."""
    return [
        orders(order(i, 1) for i in range(1, 41)),
        orders([*(order(i, 2) for i in (2, 12, 22, 32)), *(order(i, 1) for i in range(41, 46))]),
        orders(order(i, 3) for i in (2, 3, 13, 23)),
        orders([order(4, 4, "D"), order(33, 4, "D"), order(5, 0)]),
        orders(order(i, 5) for i in (14, 15, 16, 34, 42)),
    ]


# Partition values that break naive path handling: NULL, spaces, Hive's escaped characters,
# a percent-encoding look-alike, unicode.
REGIONS = ["north", None, "two words", " lead and trail ", "a/b", "k=v", "100%", "%2F", "Zoë 李", "ä=ö/ü#?"]
PARTITION_DAYS = [dt.date(2025, 1, 1), dt.date(1969, 12, 31), dt.date(1900, 1, 1), None, dt.date(2000, 2, 29)]
BUCKETS = [0, -1, 2**31 - 1, None, 7]
PARTITIONED = pa.schema([*ORDERS, ("region", pa.string()), ("pday", pa.date32()), ("bucket", pa.int32())])


def partitioned(id: int, seq: int, op: str = "U") -> dict[str, Any]:
    k = id + seq
    return {**order(id, seq, op), "region": REGIONS[k % len(REGIONS)], "pday": PARTITION_DAYS[k % len(PARTITION_DAYS)], "bucket": BUCKETS[(id // 3) % len(BUCKETS)]}


def partitioned_steps() -> list[pa.Table]:
    """Rows spread over every partition value; later commits move keys to other partitions."""
    rows = lambda items: pa.Table.from_pylist(list(items), schema=PARTITIONED)  # noqa: E731
    return [
        rows(partitioned(i, 1) for i in range(1, 31)),
        rows(partitioned(i, 2) for i in (1, 2, 5, 11, 17, 23, 29)),
        rows([*(partitioned(i, 3) for i in (2, 3, 31, 32)), partitioned(6, 3, "D")]),
    ]


def append_steps() -> list[pa.Table]:
    """An event log: the same ids again in later files (append keeps every row)."""
    return [
        orders(order(i, 1) for i in range(1, 26)),
        orders(order(i, 2) for i in range(20, 41)),
        orders([order(1, 1), *(order(i, 3) for i in range(5, 12))]),
    ]


def mapped_steps() -> list[pa.Table]:
    """For column mapping: the first file lacks `score`; the second brings it and a column whose
    name needs mapping (a space, a dot); then updates."""
    first = ORDERS.remove(ORDERS.get_field_index("score"))
    wide = pa.schema([*ORDERS, ("unit price.eur", pa.decimal128(9, 3))])

    def row(id: int, seq: int) -> dict[str, Any]:
        return {**order(id, seq), "unit price.eur": None if id % 4 == 0 else Decimal(id * 1234 + seq).scaleb(-3)}

    return [
        pa.Table.from_pylist([order(i, 1) for i in range(1, 21)], schema=first),
        pa.Table.from_pylist([*(row(i, 2) for i in (3, 7, 11)), *(row(i, 1) for i in range(21, 26))], schema=wide),
        pa.Table.from_pylist([row(i, 3) for i in (1, 7, 22)], schema=wide),
    ]


def small_steps(count: int) -> list[pa.Table]:
    """`count` small commits (for checkpoints): an insert of five new ids, then each commit
    updates two ids and inserts one."""
    steps = [orders(order(i, 1) for i in range(1, 6))]
    for n in range(1, count):
        steps.append(orders([order(n % 5 + 1, n + 1), order((n + 2) % 5 + 1, n + 1), order(5 + n, 1)]))
    return steps


TYPES = pa.schema(
    [
        ("id", pa.int64()),
        ("seq", pa.int64()),
        ("tiny", pa.int8()),
        ("small", pa.int16()),
        ("real", pa.float32()),
        ("d5_2", pa.decimal128(5, 2)),
        ("d18_4", pa.decimal128(18, 4)),
        ("d38_10", pa.decimal128(38, 10)),
        ("d38_0", pa.decimal128(38, 0)),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ts_ms", pa.timestamp("ms", tz="UTC")),
        ("bin", pa.binary()),
        ("st", pa.struct([("x", pa.int32()), ("y", pa.string()), ("inner", pa.struct([("d", pa.date32()), ("t", pa.timestamp("us", tz="UTC"))]))])),
        ("li", pa.list_(pa.int64())),
        ("li_st", pa.list_(pa.struct([("a", pa.string()), ("b", pa.decimal128(10, 2))]))),
        ("mp", pa.map_(pa.string(), pa.decimal128(10, 2))),
        ("mp_li", pa.map_(pa.int32(), pa.list_(pa.string()))),
    ]
)
_D38 = [Decimal("99999999999999999999999999.9999999999"), Decimal("-0.0000000001"), Decimal(0), None]
_BIG = [Decimal("99999999999999999999999999999999999999"), Decimal("-12345678901234567890123456789"), Decimal(1), None]


def typed_row(id: int, seq: int) -> dict[str, Any]:
    k = id * 5 + seq
    at = _T0 + dt.timedelta(days=k * 397, microseconds=k * 999_999 % 1_000_000)
    return {
        "id": id,
        "seq": seq,
        "tiny": [-128, 127, 0, None][k % 4],
        "small": [-32768, 32767, k, None][k % 4],
        "real": [1.5, -0.1, 3.4028234663852886e38, None][k % 4],
        "d5_2": [Decimal("999.99"), Decimal("-999.99"), Decimal("0.01"), None][k % 4],
        "d18_4": None if k % 5 == 0 else Decimal(k * 987654321).scaleb(-4) * (1 if k % 2 else -1),
        "d38_10": _D38[k % 4],
        "d38_0": _BIG[(k + 1) % 4],
        "ts": None if k % 6 == 0 else at,
        "ts_ms": None if k % 7 == 0 else at.replace(microsecond=at.microsecond // 1000 * 1000),
        "bin": None if k % 3 == 0 else bytes([k % 256, 0, 255]),
        "st": None if k % 5 == 1 else {"x": None if k % 2 else k, "y": f"y{k}", "inner": None if k % 3 == 1 else {"d": dt.date(1950, 1, 1) + dt.timedelta(days=k * 100), "t": at}},
        "li": None if k % 4 == 3 else [k, -k, 2**62][: k % 4],
        "li_st": [{"a": f"a{k}", "b": Decimal(k).scaleb(-2)}, {"a": None, "b": None}] if k % 2 else [],
        "mp": None if k % 5 == 2 else [("k1", Decimal(k).scaleb(-2)), ("k2", None)][: 1 + k % 2],
        "mp_li": {k: ["x", None]} if k % 3 else {},
    }


def typed_steps() -> list[pa.Table]:
    rows = lambda items: pa.Table.from_pylist(list(items), schema=TYPES)  # noqa: E731
    return [rows(typed_row(i, 1) for i in range(1, 25)), rows(typed_row(i, 2) for i in (2, 9, 17, 24)), rows(typed_row(i, 3) for i in (3, 9, 30))]


# ORDERS with a timestamp_ntz column: wall-clock times, no zone, before and after 1970.
LOCAL = pa.schema([*ORDERS, ("local_at", pa.timestamp("us"))])
_LOCAL0 = dt.datetime(1969, 12, 31, 23, 59, 59, 999999)


def local_at(id: int, seq: int) -> dt.datetime | None:
    return None if (id + seq) % 6 == 0 else _LOCAL0 + dt.timedelta(hours=id * 7 + seq - 40, microseconds=id)


def local_steps() -> list[pa.Table]:
    """merge_steps' rows with local_at."""
    return [pa.Table.from_pylist([{**r, "local_at": local_at(r["id"], r["seq"])} for r in step.to_pylist()], schema=LOCAL) for step in merge_steps()]
