"""The write matrix, a table delta-rs creates (write_deltalake, reader 1 / writer 2): tidemark
MERGEs into it, then Spark MERGEs, OPTIMIZEs and VACUUMs, three rounds; after every step tidemark, Spark and delta-rs read the same rows
(support/roundtrip.py). delta-rs itself cannot write the table once tidemark has: every
tidemark commit carries its job state as domain metadata, a writer feature deltalake 1.6 lacks."""

from __future__ import annotations

import pytest

from support import delta_log
from support.other_writers import CreatedByDeltaRs, DeltaRsWriter
from support.roundtrip import latest_version
from support.roundtrip import RoundTrip, Scenario


SCENARIOS = {
    "deltars_created": Scenario("deltars_created", CreatedByDeltaRs),
}
TABLES = list(SCENARIOS)


def build(root, name: str, spark) -> RoundTrip:
    rt = RoundTrip(root, SCENARIOS[name], spark)
    rt.run(rounds=3)
    return rt


def test_three_rounds_read_the_same_everywhere(roundtrip):
    """Every step was checked as it ran (roundtrip.run); here: all of them ran, and the table
    delta-rs created stays at reader 1 (tidemark adds no reader feature to it)."""
    assert len(roundtrip.history) == 1 + 3 * 4, roundtrip.steps
    assert delta_log.protocol(roundtrip.table, 0)["minReaderVersion"] == 1
    assert delta_log.protocol(roundtrip.table)["minReaderVersion"] == 1, delta_log.protocol(roundtrip.table)


def test_deltars_cannot_write_after_tidemark(roundtrip):
    """deltalake 1.6.6 refuses to commit to a table with the domainMetadata writer feature, which
    every tidemark table has. When a release writes it, this fails: make delta-rs the other
    writer of a round (support/other_writers.DeltaRsWriter) and update docs/compatibility.md."""
    from deltalake import DeltaTable

    before = latest_version(roundtrip.table)
    rows = [roundtrip.row(1, 900, writer="o")]
    with pytest.raises(Exception, match=r"Unsupported table features required: \[DomainMetadata\]"):
        DeltaRsWriter().merge(roundtrip.table, rows, roundtrip.schema())
    with pytest.raises(Exception, match=r"Unsupported table features required: \[DomainMetadata\]"):
        DeltaTable(str(roundtrip.table)).optimize.compact()
    assert latest_version(roundtrip.table) == before
