"""The write matrix, a table delta-rs creates (write_deltalake, reader 1 / writer 2): tidemark
MERGEs into it, then the other writer MERGEs, OPTIMIZEs and VACUUMs, three rounds: Spark in
rounds 1 and 3, delta-rs itself in round 2 (DeltaTable.merge, optimize.compact, vacuum); after every step tidemark, Spark and delta-rs read the same rows
(support/roundtrip.py)."""

from __future__ import annotations

import pytest

from support import delta_log
from support.other_writers import DeltaRsThenBoth
from support.roundtrip import RoundTrip, Scenario


SCENARIOS = {
    "deltars_created": Scenario("deltars_created", DeltaRsThenBoth),
}


@pytest.fixture(scope="module", params=list(SCENARIOS))
def roundtrip(request, spark, tmp_path_factory) -> RoundTrip:
    scenario = SCENARIOS[request.param]
    rt = RoundTrip(tmp_path_factory.mktemp(scenario.name), scenario, spark)
    rt.run(rounds=3)
    return rt


def test_three_rounds_read_the_same_everywhere(roundtrip):
    """Every step was checked as it ran (roundtrip.run); here: all of them ran, and the table
    delta-rs created stays at reader 1 (tidemark adds no reader feature to it)."""
    assert len(roundtrip.history) == 1 + 3 * 4, roundtrip.steps
    assert delta_log.protocol(roundtrip.table, 0)["minReaderVersion"] == 1
    assert delta_log.protocol(roundtrip.table)["minReaderVersion"] == 1, delta_log.protocol(roundtrip.table)
