"""One Spark session for the whole suite (local mode, 2 cores, 2 GiB: the machine has 24 GiB and
runs other work), Delta's jars resolved from Maven Central into interop/.cache/ivy on first use."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

# Every engine and tidemark agree on what a timestamp means only in UTC; PySpark turns
# timestamps into naive datetimes in the process's zone, so the process runs in UTC.
os.environ["TZ"] = "UTC"
time.tzset()

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("TIDEMARK_INTEROP_CACHE", HERE.parent / ".cache"))
DELTA_SPARK_JAR = "io.delta:delta-spark_2.13:4.4.0"  # the Maven twin of requirements.txt's delta-spark

from support.checks import Reads, filter_for  # noqa: E402
from support.engines import Engine, deltalake_engine, polars_engine, spark_engine  # noqa: E402


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("tidemark-interop")
        .config("spark.jars.packages", DELTA_SPARK_JAR)
        .config("spark.jars.ivy", str(CACHE / "ivy"))
        .config("spark.jars.ivySettings", str(HERE.parent / "ivysettings.xml"))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.driver.memory", "2g")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        # The tables are tiny and the JVM short-lived: the C1 compiler alone, the serial collector
        # and no whole-stage code generation cut the CPU a run costs by about two thirds on 2 cores.
        .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC -XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        # Delta rebuilds a snapshot's state in 50 partitions by default: far too many for tiny tables.
        .config("spark.databricks.delta.snapshotPartitions", "1")
        # VACUUM lists and deletes in this many tasks (default 10000: minutes of empty tasks per VACUUM here)
        .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "2")
        .config("spark.sql.warehouse.dir", str(CACHE / "spark-warehouse"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


class Engines(dict):
    """The engines by name, each made on first use (Spark's session only when a test needs it)."""

    def __init__(self, request):
        super().__init__()
        self.request = request

    def __missing__(self, name: str) -> Engine:
        if name == "spark":
            engine = spark_engine(self.request.getfixturevalue("spark"))
        elif name == "deltalake":
            engine = deltalake_engine()
        elif name == "polars":
            engine = polars_engine()
        else:
            raise KeyError(name)
        self[name] = engine
        return engine


@pytest.fixture(scope="session")
def engines(request) -> Engines:
    return Engines(request)


ENGINES = ["spark", "deltalake", "polars"]


def pytest_generate_tests(metafunc):
    """The read matrix (support/matrix.py): each test of a table module once per engine, per
    commit the module's table made (VERSIONS; `version` also once for the latest, read without
    versionAsOf) and per filter (FILTERS)."""
    module = metafunc.module
    if "engine" in metafunc.fixturenames:
        metafunc.parametrize("engine", getattr(module, "ENGINES", ENGINES))
    if "version" in metafunc.fixturenames:
        versions = [*module.VERSIONS, None]
        metafunc.parametrize("version", versions, ids=[*map(str, module.VERSIONS), "latest"])
    if "commit" in metafunc.fixturenames:
        metafunc.parametrize("commit", module.VERSIONS, ids=[str(v) for v in module.VERSIONS])
    if "filter_name" in metafunc.fixturenames:
        metafunc.parametrize("filter_name", list(module.FILTERS))


@pytest.fixture(scope="module")
def reads(request, job, engines) -> dict[str, Reads]:
    """Per engine, every read of the module's table, made together on first use."""
    filters = {name: filter_for(job, *f) if isinstance(f, tuple) else f for name, f in request.module.FILTERS.items()}
    return {name: Reads(engines, name, job, request.module.VERSIONS, filters) for name in getattr(request.module, "ENGINES", ENGINES)}
