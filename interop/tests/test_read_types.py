"""Every column type tidemark writes, in a merge table with deletion vectors: byte, short, float,
decimals of precision 5, 18 and 38 (scale 10 and 0, at their limits), timestamps in micro- and
milliseconds (before 1970 too), binary, a struct holding a struct, lists of longs and of
structs, maps of decimals and of lists."""

from __future__ import annotations

from support.checks import KINDS
from support.data import typed_steps
from support.matrix import *  # noqa: F403 (the read matrix's tests)
from support.tidemark import Job

STEPS = typed_steps()
VERSIONS = list(range(len(STEPS)))
FILTERS = {
    **{f"{column} {kind}": (column, kind) for column in ("tiny", "small", "real", "d5_2", "d18_4", "d38_10", "d38_0", "ts", "ts_ms") for kind in KINDS},
    **{f"{column} {kind}": (column, kind) for column in ("bin", "st", "li", "li_st", "mp", "mp_li") for kind in ("is null", "is not null")},
}


def build(root, _) -> Job:
    j = Job(root, "types", {"key": ["id"], "orderBy": "seq", "maxRowsPerFile": 8, "rewriteFilesBelow": 0})
    for step in STEPS:
        j.load(step)
    assert sorted(j.snapshots) == VERSIONS
    return j
