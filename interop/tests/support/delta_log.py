"""The few things the tests read straight from a table's _delta_log (JSON commits only): the
schema and metadata at a version, and the live data files with their statistics. Independent of
every engine under test, tidemark included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DeltaType = Any  # "long", "decimal(10,2)", or a {"type": "struct" | "array" | "map", ...} object


def commits(table: Path, upto: int | None = None) -> list[tuple[int, list[dict[str, Any]]]]:
    log = table / "_delta_log"
    versions = sorted(int(p.name[:20]) for p in log.glob("[0-9]" * 20 + ".json"))
    if versions and versions[0] != 0:
        raise AssertionError(f"{log}: commit 0 is gone (oldest {versions[0]}); these tests replay JSON commits only")
    out = []
    for v in versions:
        if upto is not None and v > upto:
            break
        text = (log / f"{v:020d}.json").read_text()
        out.append((v, [json.loads(line) for line in text.splitlines() if line.strip()]))
    return out


def metadata(table: Path, version: int | None = None) -> dict[str, Any]:
    found = None
    for _, actions in commits(table, version):
        for a in actions:
            if "metaData" in a:
                found = a["metaData"]
    if found is None:
        raise AssertionError(f"{table}: no metaData up to version {version}")
    return found


def protocol(table: Path, version: int | None = None) -> dict[str, Any]:
    found = None
    for _, actions in commits(table, version):
        for a in actions:
            if "protocol" in a:
                found = a["protocol"]
    if found is None:
        raise AssertionError(f"{table}: no protocol up to version {version}")
    return found


def schema(table: Path, version: int | None = None) -> dict[str, Any]:
    """The table schema (Delta's struct type object) at `version` (default: latest)."""
    return json.loads(metadata(table, version)["schemaString"])


def column_types(table: Path, version: int | None = None) -> dict[str, DeltaType]:
    return {f["name"]: f["type"] for f in schema(table, version)["fields"]}


def _dv_id(dv: dict[str, Any] | None) -> str:
    if not dv:
        return ""
    return f"{dv['storageType']}{dv['pathOrInlineDv']}@{dv.get('offset', '')}"


def live_files(table: Path, version: int | None = None) -> list[dict[str, Any]]:
    """The add actions live at `version`, in the order they were added."""
    files: dict[tuple[str, str], dict[str, Any]] = {}
    for _, actions in commits(table, version):
        for a in actions:
            if "remove" in a:
                files.pop((a["remove"]["path"], _dv_id(a["remove"].get("deletionVector"))), None)
            elif "add" in a:
                files[(a["add"]["path"], _dv_id(a["add"].get("deletionVector")))] = a["add"]
    return list(files.values())
