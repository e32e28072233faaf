"""The rows a history (scd2) or replace table should hold, worked out from the landed files without
tidemark, by the rules docs/concepts.md states ("Target modes"). Kept small: the source rows
here never tie at one orderBy with other values and every new orderBy changes a tracked column,
so no version absorbs a row in place (those cases are the Node property tests' job)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

Row = dict[str, Any]
HISTORY = ("valid_from", "valid_to", "is_current")


def scd2_rows(files: list[pa.Table], key: str, order_by: str, *, as_of: str | None = None) -> list[Row]:
    """Every version of every key, as if every row had arrived in order of `order_by`: a version
    lasts until the next version or delete of its key (`op = 'D'`, not stored). With `as_of`,
    each file is a full extract taken at that column's value: a key whose current version is
    open and that the extract lacks is closed at it (the column itself is not stored)."""
    events: dict[Any, dict[Any, tuple[str, Row]]] = {}
    for table in files:
        rows = table.to_pylist()
        for r in rows:
            kind = "D" if r.get("op") == "D" else "V"
            stored = {c: v for c, v in r.items() if c != as_of}
            # The same row again at one orderBy is a no-op; these files never disagree there.
            events.setdefault(r[key], {})[r[order_by]] = (kind, stored)
        if as_of is not None and rows:
            taken = rows[0][as_of]
            held = {r[key] for r in rows}
            for k, by_pos in events.items():
                if k not in held and _open_at_end(by_pos):
                    by_pos[taken] = ("D", {})
    out: list[Row] = []
    for by_pos in events.values():
        versions: list[Row] = []
        for pos in sorted(by_pos):
            kind, row = by_pos[pos]
            if versions and versions[-1]["valid_to"] is None:
                versions[-1]["valid_to"] = pos
            if kind == "V":
                versions.append({**row, "valid_from": pos, "valid_to": None})
        out += [{**v, "is_current": v["valid_to"] is None} for v in versions]
    return out


def _open_at_end(by_pos: dict[Any, tuple[str, Row]]) -> bool:
    """Whether the key's last event so far is a version (it has an open current version)."""
    return by_pos[max(by_pos)][0] == "V"


def replace_rows(files: list[pa.Table], key: str, order_by: str) -> list[Row]:
    """The newest delivery, its latest row per key (a later row winning a tie)."""
    latest: dict[Any, Row] = {}
    for r in files[-1].to_pylist():
        if r[key] not in latest or r[order_by] >= latest[r[key]][order_by]:
            latest[r[key]] = r
    return list(latest.values())
