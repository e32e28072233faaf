"""An append-mode table (an event log: every row of every file kept, the same ids again), read
by every engine."""

from __future__ import annotations

from support import delta_log
from support.checks import KINDS
from support.data import ORDERS, append_steps
from support.matrix import *  # noqa: F403 (the read matrix's tests)
from support.tidemark import Job

STEPS = append_steps()
VERSIONS = list(range(len(STEPS)))
FILTERS = {f"{column} {kind}": (column, kind) for column in ORDERS.names for kind in KINDS if column != "active" or kind.startswith("is")}


def build(root, _) -> Job:
    j = Job(root, "append", {"mode": "append", "maxRowsPerFile": 10})
    for step in STEPS:
        j.load(step)
    assert sorted(j.snapshots) == VERSIONS
    assert delta_log.protocol(j.table)["minReaderVersion"] == 1
    return j
