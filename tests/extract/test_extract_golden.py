"""Every capture's runs are extracted exactly as the stored golden copy says: the whole run JSON
(nulls included), the exported JSON and the Mastra-shaped dicts scorers read, for all runs and
for the primary runs alone, and the Mastra-shaped runs file validated at the edge."""

from __future__ import annotations

import gzip

import orjson

from tests.support.extract_golden import GOLDEN, golden


def test_every_capture_extracts_as_the_golden_copy() -> None:
    stored = orjson.loads(gzip.decompress(GOLDEN.read_bytes()))
    current = golden()
    assert sorted(current) == sorted(stored)
    for key, expected in stored.items():
        assert current[key] == expected, key
        # Byte for byte too: key order, and 1 against 1.0, which ``==`` does not see.
        assert orjson.dumps(current[key]) == orjson.dumps(expected), key
