"""A span's attribute map as stored (``store/packed.py``): small maps kept as text, GenAI ones
compressed against the dictionary, both read back exactly, and their text's size told without
decompressing."""

from __future__ import annotations

import json

import pytest

from tracescore.store.packed import pack, unpack, unpacked_size

GENAI = json.dumps(
    {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "Is the library open?"}]}]
        ),
        "gen_ai.usage.input_tokens": 52,
        "gen_ai.usage.output_tokens": 9,
    },
    separators=(",", ":"),
)


@pytest.mark.parametrize("text", ["{}", '{"k":1}', GENAI, '{"bytes":{"$b":"AP8="}}'])
def test_a_packed_map_reads_back_as_its_text_and_tells_its_size(text: str) -> None:
    stored = pack(text)
    assert unpack(stored).decode() == text
    assert unpacked_size(stored) == len(text.encode())


def test_small_maps_stay_text_and_genai_maps_shrink_to_a_third() -> None:
    assert pack('{"k":1}') == b'\x00{"k":1}'
    stored = pack(GENAI)
    assert stored[0] == 2 and len(stored) * 3 < len(GENAI), (len(stored), len(GENAI))


def test_text_compression_cannot_shrink_is_kept_as_it_is() -> None:
    noise = json.dumps({"k": bytes(range(256)).hex()[::3] * 1}, separators=(",", ":"))
    stored = pack(noise)
    assert stored[0] in (0, 2) and unpack(stored).decode() == noise
    assert len(stored) <= len(noise) + 1


SHORT = '{"gen_ai.operation.name":"chat","gen_ai.request.model":"gpt-4o-mini","gen_ai.usage.input_tokens":52}'
WITH_MAGIC = bytes.fromhex("0128b52ffd20649d0000207b35327d04007f050ddec4076c15411321ae")
""":data:`SHORT` as rows written before revision 0023 hold it: tag 1, a zstandard frame with
its magic number (``28b52ffd``)."""


def test_frames_lose_their_magic_number_and_older_frames_still_read() -> None:
    stored = pack(SHORT)
    assert stored[0] == 2 and len(stored) == len(WITH_MAGIC) - 4
    assert WITH_MAGIC[1:5] == bytes.fromhex("28b52ffd") and stored[1:5] != WITH_MAGIC[1:5]
    for form in (stored, WITH_MAGIC):
        assert unpack(form).decode() == SHORT
        assert unpacked_size(form) == len(SHORT)


def test_an_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown packed attributes format 7"):
        unpack(b"\x07{}")
