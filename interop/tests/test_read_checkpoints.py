"""Classic checkpoints: seven commits with delta.checkpointInterval 3, so checkpoints at
versions 3 and 6 and the latest version is read from a checkpoint alone. Time travel crosses
them. (V2 checkpoints: test_read_checkpoints_v2.py.)"""

from __future__ import annotations

from support.checks import KINDS
from support.data import small_steps
from support.matrix import *  # noqa: F403 (the read matrix's tests)
from support.tidemark import Job

STEPS = small_steps(7)
VERSIONS = list(range(len(STEPS)))
CHECKPOINTS = (3, 6)
FILTERS = {f"{column} {kind}": (column, kind) for column in ("id", "seq", "amount", "day", "at") for kind in KINDS}


def checkpointed_job(root, name: str, properties: dict[str, object]) -> Job:
    target = {"key": ["id"], "orderBy": "seq", "rewriteFilesBelow": 0, "tableProperties": {"delta.checkpointInterval": 3, **properties}}
    j = Job(root, name, target)
    for step in STEPS:
        j.load(step)
    assert sorted(j.snapshots) == VERSIONS
    return j


def build(root, _) -> Job:
    j = checkpointed_job(root, "checkpoint_classic", {})
    log = j.table / "_delta_log"
    assert sorted(p.name for p in log.glob("*.checkpoint.parquet")) == [f"{v:020d}.checkpoint.parquet" for v in CHECKPOINTS]
    return j
