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
