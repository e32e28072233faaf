"""Tables partitioned by a string (NULL, spaces, '/', '=', '%', '#', '?', a percent-encoding
look-alike, unicode), a date (before 1970, 1900, a leap day, NULL) and an int (negative, the int32
maximum, NULL): an append table and a merge table with deletion vectors whose keys move between
partitions. Partition filters on each value."""

from __future__ import annotations

from support import delta_log
from support.checks import both
from support.data import BUCKETS, PARTITION_DAYS, REGIONS, partitioned_steps
from support.filters import Cmp, IsNull
from support.matrix import *  # noqa: F403 (the read matrix's tests)
from support.tidemark import Job

STEPS = partitioned_steps()
VERSIONS = list(range(len(STEPS)))
PARTITION_BY = ["region", "pday", "bucket"]
SCENARIOS = {
    "partitioned_append": {"mode": "append"},
    "partitioned_merge": {"key": ["id"], "orderBy": "seq", "deleteWhen": "op = 'D'", "rewriteFilesBelow": 0},
}
FILTERS = {
    **{f"region = {v!r}": Cmp("region", "=", v) for v in REGIONS if v is not None},
    "region is null": IsNull("region"),
    "region >= 'k'": Cmp("region", ">=", "k"),
    **{f"pday = {v}": Cmp("pday", "=", v) for v in PARTITION_DAYS if v is not None},
    "pday is null": IsNull("pday"),
    "pday < 1970-01-01": Cmp("pday", "<", PARTITION_DAYS[1].replace(year=1970, month=1, day=1)),
    **{f"bucket = {v}": Cmp("bucket", "=", v) for v in BUCKETS if v is not None},
    "bucket is null": IsNull("bucket"),
    "bucket < 0": Cmp("bucket", "<", 0),
    "partition and data": both(Cmp("bucket", ">=", 0), Cmp("id", "<", 20), IsNull("region", negate=True)),
    "id =max": ("id", "=max"),
    "amount =max": ("amount", "=max"),
}


TABLES = list(SCENARIOS)


def build(root, name: str) -> Job:
    j = Job(root, name, {"partitionBy": PARTITION_BY, **SCENARIOS[name]})
    for step in STEPS:
        j.load(step)
    assert sorted(j.snapshots) == VERSIONS
    assert delta_log.metadata(j.table)["partitionColumns"] == PARTITION_BY
    return j
