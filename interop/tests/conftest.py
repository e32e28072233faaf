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

from support.ahead import Ahead, Once  # noqa: E402
from support.checks import Reads, filter_for  # noqa: E402
from support.engines import Engine, deltalake_engine, polars_engine, spark_engine  # noqa: E402


def start_spark():
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
    return session


def _needs_spark(item) -> bool:
    params = getattr(item, "callspec", None)
    return "spark" in item.fixturenames or (params is not None and params.params.get("engine") == "spark")


# The fixtures a module's `build(root, name)` makes (support/ahead.py): a read matrix table (a
# Job), a write matrix round trip; one per name in the module's TABLES, if it has them.
BUILT = ("job", "roundtrip")


@pytest.fixture(scope="session")
def spark_start(request):
    """The Spark session, started in a thread of its own as the session begins when a selected
    test needs it (else on first use), and stopped once every build has ended."""
    once = Once(start_spark, "spark-start")
    if any(map(_needs_spark, request.session.items)):
        once.start()
    yield once
    session = once.made()
    if session is not None:
        session.stop()


@pytest.fixture(scope="session", autouse=True)
def ahead(request, tmp_path_factory, spark_start) -> Ahead:
    """From the first test on, the tables of the selected tests are built by two workers, in the
    order the tests need them (support/ahead.py)."""
    work = Ahead(lambda name: tmp_path_factory.mktemp(name), spark_start)
    for item in request.session.items:
        built = [f for f in BUILT if f in item.fixturenames]
        if built and hasattr(item.module, "build"):
            params = getattr(item, "callspec", None)
            work.build(item.module, params.params.get(built[0]) if params is not None else None)
    yield work
    work.close()


@pytest.fixture(scope="session")
def spark(spark_start):
    return spark_start.result()


@pytest.fixture(scope="module")
def job(request, ahead: Ahead):
    """The module's table (its `build(root, name)`, made ahead)."""
    return ahead.table(request.module, getattr(request, "param", None))


@pytest.fixture(scope="module")
def roundtrip(request, ahead: Ahead, spark):
    """The module's round trip (its `build(root, name, spark)`, run ahead)."""
    return ahead.table(request.module, getattr(request, "param", None))


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
    """The read matrix (support/matrix.py): each test of a table module once per table it builds
    (TABLES, if it builds several), per engine, per
    commit the module's table made (VERSIONS; `version` also once for the latest, read without
    versionAsOf) and per filter (FILTERS)."""
    module = metafunc.module
    for built in BUILT:
        if built in metafunc.fixturenames and hasattr(module, "TABLES"):
            metafunc.parametrize(built, module.TABLES, indirect=True, scope="module")
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
