"""zstandard coders against a raw-content dictionary, for short values the store packs.

Span attribute maps (:mod:`tracescore.store.packed`) and score reasons
(:mod:`tracescore.store.packed_text`) are each too short to compress alone; against a
dictionary of the words they repeat they shrink several times. Both write magicless frames
(the tag byte before a frame says what it is, and the 4-byte magic was a tenth of a short
value) that carry their content size, with no checksum or dictionary id.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import zstandard

MAGICLESS = zstandard.FORMAT_ZSTD1_MAGICLESS
LEVEL = 3
"""zstandard's default level: level 19 saved 10 % more bytes at several times the CPU."""


def raw_dictionary(fragments: Iterable[str]) -> zstandard.ZstdCompressionDict:
    """A dictionary of ``fragments`` as they are (the most used last: zstandard reaches the end
    of a dictionary at the lowest cost)."""
    return zstandard.ZstdCompressionDict(
        "".join(fragments).encode(), dict_type=zstandard.DICT_TYPE_RAWCONTENT
    )


class DictionaryCoders(threading.local):
    """One thread's coders against ``dictionary`` (zstandard's compressors are not safe to
    share between threads), with parameters derived for values of ``source_size`` bytes."""

    def __init__(self, dictionary: zstandard.ZstdCompressionDict, source_size: int) -> None:
        parameters = zstandard.ZstdCompressionParameters.from_level(
            LEVEL,
            source_size=source_size,
            format=MAGICLESS,
            write_checksum=0,
            write_dict_id=0,
            write_content_size=1,
        )
        self.compress = zstandard.ZstdCompressor(
            compression_params=parameters, dict_data=dictionary
        ).compress
        self.decompress = zstandard.ZstdDecompressor(
            dict_data=dictionary, format=MAGICLESS
        ).decompress
        """Of a magicless frame, as :attr:`compress` writes them."""
        self.decompress_framed = zstandard.ZstdDecompressor(dict_data=dictionary).decompress
        """Of a frame with its magic (what older rows hold)."""
