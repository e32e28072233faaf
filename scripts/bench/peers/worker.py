"""A peer of the peers benchmark (scripts/bench/peers.ts): delta-rs or Spark with Delta Lake, kept
running between steps so the JVM's start-up is paid once and reported apart.

    python worker.py deltalake|spark CACHE_DIR IVY_SETTINGS DRIVER_MEMORY

Reads one JSON command per line on stdin and answers one JSON line on stdout (logs go to
stderr). Commands:
  {"op": "merge", "table": DIR, "source": PARQUET}             MERGE the file's rows into the table by order_id
  {"op": "day", "table": DIR, "landing": DIR, "control": DIR}  one run of the incremental job (Spark only)
  {"op": "count", "table": DIR}                                 rows of the table, read by this engine
  {"op": "quit"}
Every answer carries "ms", the step's wall time measured here (the benchmark reads the CPU time
and peak RSS of this process and its children from /proc around the step).
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ["TZ"] = "UTC"
time.tzset()

KEY = "order_id"
DELTA_SPARK_JAR = "io.delta:delta-spark_2.13:4.4.0"  # the Maven twin of interop/requirements.txt's delta-spark


def log(msg: str) -> None:
    print(f"[{sys.argv[1]}] {msg}", file=sys.stderr, flush=True)


class DeltaRs:
    """delta-rs in its documented form: the source as an Arrow table, merge(...) by the key with
    when_matched_update_all().when_not_matched_insert_all(). The table is not partitioned, so the
    docs' partition hint does not apply; the predicate adds the source's key range, the
    file-skipping hint the docs recommend for other columns (delta-rs also derives one itself)."""

    name = "deltalake"

    def __init__(self) -> None:
        import deltalake  # noqa: F401
        import pyarrow  # noqa: F401

        self.version = f"deltalake {deltalake.__version__}, pyarrow {pyarrow.__version__}"

    def merge(self, cmd: dict) -> dict:
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
        from deltalake import DeltaTable

        source = pq.read_table(cmd["source"])
        lo, hi = pc.min(source[KEY]).as_py(), pc.max(source[KEY]).as_py()
        predicate = f"t.{KEY} = s.{KEY} AND t.{KEY} >= {lo} AND t.{KEY} <= {hi}"
        metrics = (
            DeltaTable(cmd["table"])
            .merge(source=source, predicate=predicate, source_alias="s", target_alias="t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )
        return {"metrics": metrics, "predicate": predicate}

    def count(self, cmd: dict) -> dict:
        from deltalake import DeltaTable

        return {"rows": DeltaTable(cmd["table"]).to_pyarrow_dataset().count_rows()}


class Spark:
    """Spark with Delta Lake, local[2], deletion vectors on (the tables have
    delta.enableDeletionVectors, and new ones get it by default): MERGE INTO ... UPDATE SET * /
    INSERT *, and the tutorial's incremental job."""

    name = "spark"

    def __init__(self, cache: str, ivy_settings: str, driver_memory: str) -> None:
        import pyspark
        from pyspark.sql import SparkSession

        started = time.perf_counter()
        self.spark = (
            SparkSession.builder.master("local[2]")
            .appName("tidemark-bench-peers")
            .config("spark.jars.packages", DELTA_SPARK_JAR)
            .config("spark.jars.ivy", os.path.join(cache, "ivy"))
            .config("spark.jars.ivySettings", ivy_settings)
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            .config("spark.driver.memory", driver_memory)
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            # Two cores: a few shuffle partitions (AQE coalesces further), not the default 200.
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.default.parallelism", "2")
            .config("spark.databricks.delta.properties.defaults.enableDeletionVectors", "true")
            # Delta rebuilds a snapshot's state in 50 partitions by default; a few suit 2 cores.
            .config("spark.databricks.delta.snapshotPartitions", "2")
            .config("spark.sql.warehouse.dir", os.path.join(cache, "spark-warehouse"))
            .getOrCreate()
        )
        self.spark.sparkContext.setLogLevel("ERROR")
        # A first query: the session is ready to plan and run (part of start-up, not of a step).
        self.spark.range(1).count()
        self.startup_ms = (time.perf_counter() - started) * 1000
        self.version = f"pyspark {pyspark.__version__}, {DELTA_SPARK_JAR}"
        self.jvm_pid = int(self.spark.sparkContext._jvm.ProcessHandle.current().pid())

    def merge(self, cmd: dict) -> dict:
        self.spark.read.parquet(cmd["source"]).createOrReplaceTempView("changes")
        rows = self.spark.sql(
            f"MERGE INTO delta.`{cmd['table']}` AS t USING changes AS s ON t.{KEY} = s.{KEY} "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        ).collect()
        return {"metrics": rows[0].asDict() if rows else {}}

    def day(self, cmd: dict) -> dict:
        """The tutorial's incremental job: the watermark (the newest landing-file modification time
        loaded) from a Delta control table; the files modified since; the latest row per key by
        row_number() over the key ordered by updated_at descending; MERGE whenMatchedUpdateAll /
        whenNotMatchedInsertAll; the watermark moved only after the MERGE succeeded."""
        from delta.tables import DeltaTable
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        spark, control = self.spark, cmd["control"]
        watermark = None
        if DeltaTable.isDeltaTable(spark, control):
            watermark = spark.read.format("delta").load(control).agg(F.max("watermark")).first()[0]
        files = spark.read.option("recursiveFileLookup", "true").parquet(cmd["landing"]).withColumn("_mtime", F.col("_metadata.file_modification_time"))
        if watermark is not None:
            files = files.where(F.col("_mtime") > F.lit(watermark))
        files = files.cache()
        new_watermark = files.agg(F.max("_mtime")).first()[0]
        if new_watermark is None:
            files.unpersist()
            return {"rows": 0}
        latest = (
            files.withColumn("_rn", F.row_number().over(Window.partitionBy(KEY).orderBy(F.col("updated_at").desc())))
            .where("_rn = 1")
            .drop("_rn", "_mtime")
        )
        (
            DeltaTable.forPath(spark, cmd["table"])
            .alias("t")
            .merge(latest.alias("s"), f"t.{KEY} = s.{KEY}")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
        rows = files.count()
        files.unpersist()
        spark.createDataFrame([(new_watermark,)], "watermark timestamp").write.format("delta").mode("overwrite").save(control)
        return {"rows": rows}

    def count(self, cmd: dict) -> dict:
        return {"rows": self.spark.read.format("delta").load(cmd["table"]).count()}


def main() -> None:
    kind = sys.argv[1]
    # Answers go to the original stdout; anything else printed there (Spark's Ivy report, the
    # JVM's messages: the JVM inherits fd 1) goes to stderr.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    started = time.perf_counter()
    peer = DeltaRs() if kind == "deltalake" else Spark(sys.argv[2], sys.argv[3], sys.argv[4])
    hello = {"ready": True, "version": peer.version, "startup_ms": (time.perf_counter() - started) * 1000, "pid": os.getpid()}
    if isinstance(peer, Spark):
        hello["jvm_pid"] = peer.jvm_pid
    print(json.dumps(hello), file=answers, flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "quit":
            break
        t0 = time.perf_counter()
        try:
            out = getattr(peer, cmd["op"])(cmd)
            out["ms"] = (time.perf_counter() - t0) * 1000
        except Exception as err:  # the benchmark reports it and stops
            out = {"error": f"{type(err).__name__}: {err}"[:4000]}
        print(json.dumps(out, default=str), file=answers, flush=True)
    if isinstance(peer, Spark):
        peer.spark.stop()


if __name__ == "__main__":
    main()
