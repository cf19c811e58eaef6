"""A span's attribute map as the store keeps it: its typed JSON (:mod:`tracescore.store.codec`),
compressed with zstandard against a dictionary of the words GenAI spans are made of.

One span's attributes are a few hundred bytes; compressed alone they shrink by barely a third
(zlib saved ~700 bytes of a 4-span trace's 1,470), because a compressor learns a text's
repetitions from the text itself and one span has few. Most of what such a span spells is the
same everywhere, though: the semantic conventions' keys (``"gen_ai.input.messages":``) and
the JSON of chat messages (``{\\"role\\": \\"user\\", \\"parts\\": [{\\"type\\": \\"text\\"``).
zstandard can start from a *raw content* dictionary, any bytes it then finds matches in, so
those fragments cost a few bits each. The dictionary below holds only such generic fragments
(no benchmark's or user's content) and is part of the stored format: changing it means a new
tag, with the old one kept for rows already written.

A stored value is one tag byte then its body:

- ``0``: the JSON text as it is (short maps, ``{}``, and text zstandard would not shrink);
- ``1``: a zstandard frame (with its content size) against :data:`_DICTIONARY_1`, as rows were
  written before revision ``0023_compact_spans_traces``;
- ``2``: the same, without the frame's 4-byte magic number (zstandard's *magicless* format): the
  tag says already what follows, and every span paid those bytes.

Compressors and decompressors are per thread (zstandard's are not safe to share), made once.
"""

from __future__ import annotations

import zstandard

from tracescore.store.zstd_dictionary import MAGICLESS, DictionaryCoders, raw_dictionary

_RAW, _ZSTD_1, _ZSTD_1_BARE = 0, 1, 2
_RAW_TAG, _ZSTD_1_BARE_TAG = bytes([_RAW]), bytes([_ZSTD_1_BARE])

_SMALL = 48
"""JSON text shorter than this is kept as it is: a frame's header and the tag would eat the
little compression could save."""

_TUNED_FOR = 16_384
"""The document size the compressor's parameters are derived for: a window that spans the whole
dictionary, which an attribute map of any size then matches against."""

_FRAGMENTS = (
    # Keys of the OpenTelemetry GenAI semantic conventions, most used last (zstandard finds
    # matches near the end of a dictionary at a lower cost).
    '"gen_ai.conversation.id":"',
    '"gen_ai.data_source.id":"',
    '"gen_ai.embeddings.dimension.count":',
    '"gen_ai.evaluation.name":"',
    '"gen_ai.evaluation.score.value":',
    '"gen_ai.evaluation.score.label":"',
    '"gen_ai.evaluation.explanation":"',
    '"gen_ai.output.type":"text"',
    '"gen_ai.request.choice.count":',
    '"gen_ai.request.seed":',
    '"gen_ai.request.frequency_penalty":',
    '"gen_ai.request.presence_penalty":',
    '"gen_ai.request.stop_sequences":[',
    '"gen_ai.request.top_k":',
    '"gen_ai.request.top_p":',
    '"gen_ai.request.temperature":',
    '"gen_ai.request.max_tokens":',
    '"gen_ai.response.id":"',
    '"gen_ai.response.finish_reasons":["stop"]',
    '"gen_ai.response.finish_reasons":["tool_calls"]',
    '"gen_ai.response.model":"',
    '"gen_ai.provider.name":"openai"',
    '"gen_ai.system":"openai"',
    '"gen_ai.agent.id":"',
    '"gen_ai.agent.description":"',
    '"gen_ai.agent.name":"',
    '"gen_ai.tool.description":"',
    '"gen_ai.tool.type":"function"',
    '"gen_ai.tool.definitions":"[{\\"type\\": \\"function\\", \\"name\\": \\"',
    '"gen_ai.tool.call.arguments":"{\\"',
    '"gen_ai.tool.call.result":"{\\"',
    '"gen_ai.tool.call.id":"call_',
    '"gen_ai.tool.name":"',
    '"gen_ai.operation.name":"execute_tool"',
    '"gen_ai.operation.name":"invoke_agent"',
    '"gen_ai.operation.name":"create_agent"',
    '"gen_ai.operation.name":"embeddings"',
    '"gen_ai.usage.input_tokens":',
    '"gen_ai.usage.output_tokens":',
    '"gen_ai.system_instructions":"[{\\"type\\": \\"text\\", \\"content\\": \\"',
    '"gen_ai.request.model":"gpt-4o-mini","gen_ai.request.model":"claude-',
    '"gen_ai.input.messages":"[{\\"role\\": \\"system\\", \\"parts\\": [{\\"type\\": \\"text\\", '
    '\\"content\\": \\"',
    '"gen_ai.input.messages":"[{\\"role\\": \\"user\\", \\"parts\\": [{\\"type\\": \\"text\\", '
    '\\"content\\": \\"',
    '"gen_ai.output.messages":"[{\\"role\\": \\"assistant\\", \\"parts\\": [{\\"type\\": '
    '\\"tool_call\\", \\"id\\": \\"call_',
    '\\", \\"name\\": \\"',
    '\\", \\"arguments\\": {\\"',
    '{\\"role\\": \\"tool\\", \\"parts\\": [{\\"type\\": \\"tool_call_response\\", \\"id\\": \\"',
    '\\", \\"response\\": ',
    '\\"}], \\"finish_reason\\": \\"stop\\"}]"',
    '\\"}]}]"',
    '"gen_ai.output.messages":"[{\\"role\\": \\"assistant\\", \\"parts\\": [{\\"type\\": '
    '\\"text\\", \\"content\\": \\"',
    '"gen_ai.operation.name":"chat","gen_ai.request.model":"',
)
_DICTIONARY_1 = raw_dictionary(_FRAGMENTS)


_CODERS = DictionaryCoders(_DICTIONARY_1, _TUNED_FOR)


def pack(text: str) -> bytes:
    """The stored form of a span's typed JSON attribute map."""
    data = text.encode()
    if len(data) < _SMALL:
        return _RAW_TAG + data
    frame = _CODERS.compress(data)
    if len(frame) >= len(data):
        return _RAW_TAG + data
    return _ZSTD_1_BARE_TAG + frame


def unpack(stored: bytes) -> bytes:
    """The JSON text of a :func:`pack` result (as bytes, which :func:`codec.decode` reads)."""
    tag = stored[0]
    if tag == _RAW:
        return stored[1:]
    if tag == _ZSTD_1_BARE:
        return _CODERS.decompress(stored[1:])
    if tag == _ZSTD_1:
        return _CODERS.decompress_framed(stored[1:])
    raise ValueError(f"unknown packed attributes format {tag}")


def unpacked_size(stored: bytes) -> int:
    """Bytes of the JSON text a :func:`pack` result holds, without decompressing it (what a
    trace read's limit counts, :mod:`tracescore.store.trace_cut`)."""
    if stored[0] == _ZSTD_1_BARE:
        return int(zstandard.get_frame_parameters(stored[1:], format=MAGICLESS).content_size)
    if stored[0] == _ZSTD_1:
        return int(zstandard.frame_content_size(stored[1:]))
    return len(stored) - 1
