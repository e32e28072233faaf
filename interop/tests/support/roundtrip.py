"""The write matrix: a table another engine created, written in turn by tidemark (a real job
MERGEing a landed file: inserts, updates, a delete, a stale row that must lose, a new column)
and by that engine (its MERGE, OPTIMIZE and VACUUM), three rounds. After every step tidemark
(`tidemark show`), Spark and delta-rs read the same rows, and those rows are what a model worked
out here says (each writer's rules applied to the rows it was given); Spark's full read and
DESCRIBE DETAIL, and delta-rs's DeltaTable load and file_uris(), agree with the log."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from . import delta_log
from .canon import canon_rows, diff
from .checks import LINEAGE
from .data import ORDERS, order
from .tidemark import CliError, Job

Row = dict[str, Any]


def latest_version(table: Path) -> int:
    log = table / "_delta_log"
    return max(int(p.name[:20]) for p in log.glob("[0-9]" * 20 + ".json"))


def data_files(table: Path) -> set[str]:
    """Every file in the table folder outside _delta_log/ (relative paths)."""
    return {str(p.relative_to(table)) for p in table.rglob("*") if p.is_file() and p.relative_to(table).parts[0] != "_delta_log"}


def sql_name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


@dataclass
class Model:
    """The table's rows (lineage columns aside) as each writer's rules make them, keyed by id."""

    rows: dict[int, Row] = field(default_factory=dict)

    def tidemark_merge(self, batch: list[Row]) -> None:
        """tidemark: per key the batch's newest row (by seq; the later one on a tie) replaces the
        stored row unless the stored row's seq is greater; op = 'D' deletes instead."""
        newest: dict[int, Row] = {}
        for r in batch:
            if r["id"] not in newest or r["seq"] >= newest[r["id"]]["seq"]:
                newest[r["id"]] = r
        for key, r in newest.items():
            stored = self.rows.get(key)
            if stored is not None and stored["seq"] > r["seq"]:
                continue
            if r["op"] == "D":
                self.rows.pop(key, None)
            else:
                self.rows[key] = dict(r)

    def spark_merge(self, batch: list[Row]) -> None:
        """The other writer's MERGE (merge_sql): matched and op = 'D' deletes, matched and a
        greater seq updates the columns the batch has, unmatched inserts."""
        for r in batch:
            stored = self.rows.get(r["id"])
            if stored is not None and r["op"] == "D":
                del self.rows[r["id"]]
            elif stored is not None and r["seq"] > stored["seq"]:
                stored.update(r)
            elif stored is None and r["op"] != "D":
                self.rows[r["id"]] = dict(r)


def merge_sql(target: str, source: str, columns: list[str]) -> str:
    """The MERGE the other writer runs (Spark SQL; the model's spark_merge)."""
    sets = ", ".join(f"t.{sql_name(c)} = s.{sql_name(c)}" for c in columns)
    names = ", ".join(sql_name(c) for c in columns)
    values = ", ".join(f"s.{sql_name(c)}" for c in columns)
    return (
        f"MERGE INTO {target} t USING {source} s ON t.id = s.id "
        "WHEN MATCHED AND s.op = 'D' THEN DELETE "
        f"WHEN MATCHED AND s.seq > t.seq THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED AND s.op <> 'D' THEN INSERT ({names}) VALUES ({values})"
    )


@dataclass
class Plan:
    """Which ids each step of a round touches: round r's rows have seq 100 r + 10 (tidemark) and
    100 r + 50 (the other writer), so every step's rows are newer than all before it, except
    tidemark's stale row (seq 100 r - 60 on an id the other writer updated last round, seq 0 on
    an initial row in round 1). Deleted ids are never used again."""

    initial: int = 30

    def tidemark_ids(self, r: int) -> dict[str, list[int]]:
        return {
            "update": [r, 10 + r, 20 + r],
            "insert": [100 + 10 * r + i for i in range(3)],
            "delete": [30 - 2 * r],
            "stale": [7 + r],
        }

    def other_ids(self, r: int) -> dict[str, list[int]]:
        return {
            # one of tidemark's updates and one of its inserts of this round, and the id tidemark's
            # next round sends a stale row for
            "update": [10 + r, 100 + 10 * r, 7 + r + 1],
            "insert": [200 + 10 * r + i for i in range(2)],
            "delete": [29 - 2 * r],
        }


@dataclass
class Scenario:
    """A table another engine creates, and what the rounds do and check on it."""

    name: str
    # (spark, a work folder) -> the engine that creates the table and is the other writer: its
    # name, create(path, rows, schema), merge(path, rows, schema), optimize(path), vacuum(path);
    # `creator`, if it has one, names the engine that creates the table instead; for_round(r),
    # if it has one, says which writer round r's other writer is
    writer: Callable[[Any, Path], Any]
    # columns besides ORDERS the table has from the start: name -> (pyarrow type, value of a row)
    extra: Mapping[str, tuple[pa.DataType, Callable[[int, int], Any]]] = field(default_factory=dict)
    # the name of round r's new column (tidemark adds it)
    new_column: Callable[[int], str] = lambda r: f"note_{r}"
    target: Mapping[str, Any] = field(default_factory=dict)
    # checks after every step: (roundtrip, step name, the versions the step committed)
    checks: list[Callable[["RoundTrip", str, range], None]] = field(default_factory=list)
    # a refusal tried in round 2 before tidemark's merge: (roundtrip) -> None
    refusal: Callable[["RoundTrip"], None] | None = None


class RoundTrip:
    def __init__(self, root: Path, scenario: Scenario, spark):
        self.scenario, self.spark = scenario, spark
        target = {"key": ["id"], "orderBy": "seq", "deleteWhen": "op = 'D'", "maxRowsPerFile": 10, **scenario.target}
        self.job = Job(root, scenario.name, target)
        self.table = self.job.table
        self.model = Model()
        self.columns: list[str] = [*ORDERS.names, *scenario.extra]  # the non-lineage columns, in order
        self.types: dict[str, pa.DataType] = {**{f.name: f.type for f in ORDERS}, **{c: t for c, (t, _) in scenario.extra.items()}}
        self.new_columns: list[str] = []
        self.steps: list[str] = []
        # after each step: its name, the versions it committed, the rows read (canonical)
        self.history: list[tuple[str, range, list[Row]]] = []
        # Spark's DESCRIBE DETAIL after the latest step (check)
        self.detail: dict[str, Any] = {}
        self.writer = scenario.writer(spark, root / "other-input")
        # seconds spent per activity (printed by the tests, to keep the suite's time in view)
        self.seconds: dict[str, float] = defaultdict(float)

    @contextmanager
    def timed(self, what: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[what] += time.monotonic() - started

    # -- rows ----------------------------------------------------------------------------------
    def row(self, id: int, seq: int, op: str = "U", writer: str = "t") -> Row:
        out = order(id, seq, op)
        for name, (_, value) in self.scenario.extra.items():
            out[name] = value(id, seq)
        for r, name in enumerate(self.new_columns, start=1):
            out[name] = None if (id + seq + r) % 4 == 0 else f"{writer}{r}:{id}/{seq} ✓"
        return out

    def schema(self) -> pa.Schema:
        return pa.schema([(c, self.types[c]) for c in self.columns])

    def arrow(self, rows: list[Row]) -> pa.Table:
        return pa.Table.from_pylist(rows, schema=self.schema())

    # -- steps -----------------------------------------------------------------------------------
    def step(self, name: str, action: Callable[[], None], apply: Callable[[], None]) -> None:
        """Run `action`, move the model by `apply`, and check every reader against both."""
        before = latest_version(self.table) if (self.table / "_delta_log").exists() else -1
        with self.timed(name.split(": ")[-1].split(" (")[0]):
            action()
        apply()
        after = latest_version(self.table)
        self.steps.append(name)
        versions = range(before + 1, after + 1)
        rows = self.check(name)
        self.history.append((name, versions, rows))
        for extra in self.scenario.checks:
            with self.timed(f"check {extra.__name__}"):
                extra(self, name, versions)

    def create(self) -> None:
        rows = [self.row(i, 1) for i in range(1, Plan.initial + 1)]
        self.step(f"{getattr(self.writer, 'creator', self.writer.name)} creates the table", lambda: self.writer.create(self.table, rows, self.schema()), lambda: self.model.tidemark_merge(rows))

    def tidemark_round(self, r: int) -> None:
        ids = Plan().tidemark_ids(r)
        column = self.scenario.new_column(r)
        self.new_columns.append(column)
        self.columns.append(column)
        self.types[column] = pa.string()
        seq = 100 * r + 10
        rows = [self.row(i, seq) for i in ids["update"] + ids["insert"]]
        rows += [self.row(i, seq, "D") for i in ids["delete"]]
        rows += [self.row(i, 0 if r == 1 else 100 * r - 60) for i in ids["stale"]]

        def run() -> None:
            self.job.land(self.arrow(rows))
            report = self.job.cli_json("run")
            assert report.get("status") == "succeeded" and report.get("commits") == 1, json.dumps(report)[:3000]
            stale = len(ids["stale"])
            assert report["skippedStale"] == stale, f"run report skippedStale {report['skippedStale']}, {stale} stale rows were sent"

        self.step(f"round {r}: tidemark MERGE (adds {column})", run, lambda: self.model.tidemark_merge(rows))

    def other_round(self, r: int) -> None:
        ids = Plan().other_ids(r)
        seq = 100 * r + 50
        rows = [self.row(i, seq, writer="o") for i in ids["update"] + ids["insert"]]
        rows += [self.row(i, seq, "D", writer="o") for i in ids["delete"]]
        writer = self.writer.for_round(r) if hasattr(self.writer, "for_round") else self.writer
        other = writer.name
        unchanged = lambda: None  # noqa: E731
        self.step(f"round {r}: {other} MERGE", lambda: writer.merge(self.table, rows, self.schema()), lambda: self.model.spark_merge(rows))
        self.step(f"round {r}: {other} OPTIMIZE", lambda: writer.optimize(self.table), unchanged)
        self.step(f"round {r}: {other} VACUUM", lambda: writer.vacuum(self.table), unchanged)

    def run(self, rounds: int = 3) -> None:
        started = time.monotonic()
        self.create()
        for r in range(1, rounds + 1):
            if r == 2 and self.scenario.refusal is not None:
                with self.timed("refusal"):
                    self.scenario.refusal(self)
            self.tidemark_round(r)
            self.other_round(r)
        spent = ", ".join(f"{k} {v:.1f}" for k, v in sorted(self.seconds.items(), key=lambda kv: -kv[1]))
        print(f"\n{self.scenario.name}: {time.monotonic() - started:.1f} s: {spent}")

    # -- checks ----------------------------------------------------------------------------------
    def check(self, step: str) -> list[Row]:
        """tidemark, Spark and delta-rs read the same rows; Spark's DESCRIBE DETAIL and
        delta-rs's file_uris() list the log's live files. Returns the rows (canonical)."""
        from deltalake import DeltaTable, QueryBuilder

        types = delta_log.column_types(self.table)
        version = latest_version(self.table)
        where = f"after {step} (version {version})"
        showing = self.job.show_later()  # nothing writes the table until the check is done
        with self.timed("check: Spark read"):
            spark_rows = canon_rows([r.asDict(recursive=True) for r in self.spark.read.format("delta").load(str(self.table)).collect()], types)

        live = {unquote(a["path"]) for a in delta_log.live_files(self.table)}
        with self.timed("check: Spark DESCRIBE DETAIL"):
            detail = self.spark.sql(f"DESCRIBE DETAIL delta.`{self.table}`").collect()[0]
        self.detail = detail.asDict()  # the step's DESCRIBE DETAIL, for the feature checks after it
        assert detail["numFiles"] == len(live), f"{where}: Spark DESCRIBE DETAIL numFiles {detail['numFiles']}, the log has {len(live)} live files"

        started = time.monotonic()
        table = DeltaTable(str(self.table))
        assert table.version() == version, f"{where}: delta-rs loads version {table.version()}"
        files = {str(Path(unquote(uri.removeprefix("file://"))).relative_to(self.table)) for uri in table.file_uris()}
        assert files == live, f"{where}: delta-rs file_uris() differ from the log: only delta-rs {sorted(files - live)[:3]}, only the log {sorted(live - files)[:3]}"
        rs_rows = canon_rows(pa.table(QueryBuilder().register("t", table).execute("SELECT * FROM t").read_all()).to_pylist(), types)
        self.seconds["check: delta-rs"] += time.monotonic() - started
        with self.timed("check: tidemark show (the wait for it)"):
            shown = canon_rows(showing.result(), types)
        problem = diff(shown, spark_rows)
        assert problem is None, f"{where}: Spark vs tidemark show:\n{problem}"
        problem = diff(shown, rs_rows)
        assert problem is None, f"{where}: delta-rs vs tidemark show:\n{problem}"
        self.check_model(shown, step)
        return shown

    def check_model(self, rows: list[Row], step: str) -> None:
        types = {c: t for c, t in delta_log.column_types(self.table).items() if c not in LINEAGE}
        assert sorted(types) == sorted(self.columns), f"after {step}: the table's columns {sorted(types)}, expected {sorted(self.columns)}"
        expected = canon_rows(({c: r.get(c) for c in types} for r in self.model.rows.values()), types)
        actual = [{c: r[c] for c in types} for r in rows]
        problem = diff(expected, actual)
        assert problem is None, f"after {step}: the table vs what the writers were asked to do:\n{problem}"

    def refuse(self, rows: list[Row], expected: str, exit_code: int = 1) -> dict[str, Any]:
        """tidemark's run of `rows` is refused with an error matching `expected`: no version and
        no file is written. The landed file is taken away again (the next round lands anew)."""
        before_version, before_files = latest_version(self.table), data_files(self.table)
        path = self.job.land(self.arrow(rows))
        done = self.job.cli("run", "--json", "--log-level", "warn", expect=exit_code)
        report = json.loads(done.stdout)
        message = json.dumps(report.get("error")) + done.stderr
        assert re.search(expected, message), f"refusal does not match {expected!r}: {message[:3000]}"
        assert latest_version(self.table) == before_version, "a refused run committed"
        written = data_files(self.table) - before_files
        assert not written, f"a refused run wrote files: {sorted(written)[:5]}"
        path.unlink()
        self.job.landed.pop()
        return report


def refuse_feature(job: Job, land: pa.Table, feature: str) -> None:
    """A table tidemark must not write: its first run is refused naming `feature`, nothing written."""
    before_version, before_files = latest_version(job.table), data_files(job.table)
    job.land(land)
    done = job.cli("run", "--json", "--log-level", "warn", expect=1)
    report = json.loads(done.stdout)
    error = report.get("error") or {}
    assert error.get("type") == "UnsupportedFeatureError", report
    assert feature in error.get("message", ""), error
    assert latest_version(job.table) == before_version, "a refused run committed"
    assert data_files(job.table) == before_files, f"a refused run wrote files: {sorted(data_files(job.table) - before_files)[:5]}"


def parquet_input(folder: Path, rows: list[Row], schema: pa.Schema) -> Path:
    """The other writer's input rows as a Parquet file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"input-{len(list(folder.iterdir())):03d}.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)
    return path


def at_utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).astimezone(dt.timezone.utc)
