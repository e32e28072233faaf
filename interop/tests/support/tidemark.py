"""Tables built by the real tidemark CLI (node bin/tidemark.js), one job per table: a local
landing folder of Parquet files, one day folder per step, and a local Delta table. After every
commit the job records what `tidemark show` returned at that version, so each engine's read of
any version can be compared with tidemark's own."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[3]
BIN = REPO / "bin" / "tidemark.js"
FIRST_DAY = dt.date(2025, 1, 1)
# Every row of a table (show's --limit); the tables here are small.
ALL_ROWS = 1_000_000
# `show` started while the caller reads the same version with other engines (Job.show_later)
_SHOWS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="tidemark-show")


class CliError(AssertionError):
    pass


class Job:
    """One tidemark job whose table the tests read. `target` is the job's target block
    without `uri`; `job` adds job-level fields, `source` fields of the source block."""

    def __init__(self, root: Path, name: str, target: dict[str, Any], job: dict[str, Any] | None = None, source: dict[str, Any] | None = None):
        self.root = root
        self.name = name
        self.landing = root / "landing"
        self.table = root / "table"
        self.config = root / "tidemark.yaml"
        self.landing.mkdir(parents=True, exist_ok=True)
        config = {
            # Small and polite: the machine runs other work too.
            "engine": {"threads": 1, "memoryLimit": "1GiB"},
            "jobs": [
                {
                    "name": name,
                    "maxFilesPerBatch": 1,
                    "source": {"uri": str(self.landing), "discover": {"by": "partition", "layout": "{yyyy}/{mm}/{dd}"}, **(source or {})},
                    "target": {"uri": str(self.table), **target},
                    **(job or {}),
                }
            ],
        }
        self.config.write_text(json.dumps(config, indent=2))  # JSON is YAML
        self.target = target
        self.steps = 0
        # the Parquet files landed, in the order they were loaded
        self.landed: list[pa.Table] = []
        # version -> rows `tidemark show` returned right after that commit
        self.snapshots: dict[int, list[dict[str, Any]]] = {}
        # version -> the run report (--json) of the commit
        self.reports: dict[int, dict[str, Any]] = {}

    # -- the CLI -----------------------------------------------------------------------------
    def cli(self, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
        argv = ["node", str(BIN), *args, "--config", str(self.config)]
        done = subprocess.run(argv, cwd=self.root, capture_output=True, text=True, timeout=300)
        if done.returncode != expect:
            raise CliError(f"tidemark {' '.join(args)} exited {done.returncode} (expected {expect})\nstdout: {done.stdout[-4000:]}\nstderr: {done.stderr[-4000:]}")
        return done

    def cli_json(self, *args: str) -> dict[str, Any]:
        return json.loads(self.cli(*args, "--json", "--log-level", "warn").stdout)

    def show(self) -> list[dict[str, Any]]:
        out = self.cli("show", "--job", self.name, "--json", "--limit", str(ALL_ROWS), "--log-level", "warn").stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def show_later(self) -> Future:
        """`show` in a thread: its process start overlaps what the caller does until result()."""
        return _SHOWS.submit(self.show)

    def history(self) -> list[dict[str, Any]]:
        return self.cli_json("history", "--limit", "1000")["commits"]

    def status(self) -> dict[str, Any]:
        return self.cli_json("status")

    # -- steps ---------------------------------------------------------------------------------
    def land(self, table: pa.Table) -> Path:
        """Write `table` as the next day's Parquet file of the landing zone."""
        day = FIRST_DAY + dt.timedelta(days=self.steps)
        self.steps += 1
        path = self.landing / f"{day:%Y/%m/%d}" / f"part-{self.steps:03d}.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        self.landed.append(table)
        return path

    def load(self, table: pa.Table) -> dict[str, Any]:
        """Land `table` and run the job: one commit, whose version and `show` rows are recorded."""
        self.land(table)
        report = self.cli_json("run")
        if report.get("status") != "succeeded" or report.get("commits") != 1:
            raise CliError(f"tidemark run did not make one commit: {json.dumps(report)[:2000]}")
        self.record(report)
        return report

    def record(self, report: dict[str, Any]) -> int:
        version = int(report["tableVersion"])
        self.reports[version] = report
        self.snapshots[version] = self.show()
        return version

    @property
    def key(self) -> list[str] | None:
        return None if self.target.get("mode") == "append" else self.target["key"]

    @property
    def latest(self) -> int:
        return max(self.snapshots)

    def log_entries(self, version: int) -> list[dict[str, Any]]:
        """The actions of commit `version` (its JSON file)."""
        text = (self.table / "_delta_log" / f"{version:020d}.json").read_text()
        return [json.loads(line) for line in text.splitlines() if line.strip()]
