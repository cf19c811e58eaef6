"""py3langid's model, decompressed once per installation rather than once per process.

The bundled model is an LZMA-compressed NumPy archive: 4.6 MB that take about 0.4 s of CPU
to decompress to its 68 MB, the whole of a model load but a tenth. An insights pass runs in a
process of its own (:mod:`tracescore.insights.pass_process`) and loads the model every pass
that meets a text not plainly English, so that LZMA work was repeated every pass. The first
load keeps the archive zstd-compressed (6.8 MB, read back in under 0.1 s) in the user's cache
directory, keyed to the bundled file; later loads read that copy. The arrays and the model
built from them are the ones py3langid builds (:func:`py3langid.modelio.load_model`), so every
identification is the same. A missing, unwritable or damaged cache only means the bundled
model is read as before.
"""

from __future__ import annotations

import contextlib
import lzma
import os
import shutil
import tempfile
from importlib.metadata import version
from pathlib import Path
from typing import IO

import numpy as np
import zstandard
from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier
from py3langid.modelio import _to_array

CACHE_ENV = "TRACESCORE_CACHE_DIR"
"""Where the decompressed model is kept (default: ``$XDG_CACHE_HOME/tracescore``, else
``~/.cache/tracescore``)."""
ZSTD_LEVEL = 3
"""6.8 MB, compressed in about 0.13 s (once), decompressed in about 0.07 s."""
_CHUNK = 1 << 20


def load_identifier() -> LanguageIdentifier:
    """py3langid's bundled model with normalised probabilities, as
    ``LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)`` builds it, read from
    the cache when it holds it (and put there when it does not). The archive is streamed to a
    temporary file, as py3langid does, so it is never resident whole besides its arrays."""
    bundled = MODEL_DIR / MODEL_FILE
    cached = cache_file(bundled)
    with tempfile.TemporaryFile(suffix=".npz") as archive:
        if cached is None or not _read_cache(cached, archive):
            with lzma.open(bundled) as source:
                shutil.copyfileobj(source, archive, _CHUNK)
            if cached is not None:
                _write_cache(archive, cached)
        archive.seek(0)
        try:
            return _identifier(archive)
        except (OSError, ValueError, KeyError, EOFError):
            if cached is None:
                raise
            cached.unlink(missing_ok=True)  # a damaged copy: read the bundled model again
            return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def cache_file(bundled: Path) -> Path | None:
    """The cached copy of ``bundled`` (None when its directory is not absolute, as ``~`` with
    no home to expand to, or cannot be made): named by py3langid's version and the bundled file's
    size and time, so an upgrade reads anew."""
    directory = Path(
        os.environ.get(CACHE_ENV)
        or Path(os.environ.get("XDG_CACHE_HOME") or Path("~/.cache").expanduser(), "tracescore")
    )
    if not directory.is_absolute():
        return None  # not a directory relative to wherever the process happens to run
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    stat = bundled.stat()
    name = f"py3langid-{version('py3langid')}-{stat.st_size}-{stat.st_mtime_ns}.npz.zst"
    return directory / name


def _read_cache(cached: Path, archive: IO[bytes]) -> bool:
    try:
        with cached.open("rb") as source:
            zstandard.ZstdDecompressor().copy_stream(
                source, archive, read_size=_CHUNK, write_size=_CHUNK
            )
    except (OSError, zstandard.ZstdError):
        archive.seek(0)
        archive.truncate()
        return False
    return True


def _write_cache(archive: IO[bytes], cached: Path) -> None:
    """Keep ``archive`` in ``cached``, written aside and renamed into place (a process
    reading it meanwhile sees the whole file or none); a failure leaves no cache."""
    archive.seek(0)
    partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
    try:
        with partial.open("wb") as target:
            zstandard.ZstdCompressor(level=ZSTD_LEVEL).copy_stream(
                archive, target, read_size=_CHUNK, write_size=_CHUNK
            )
        partial.replace(cached)
    except (OSError, zstandard.ZstdError):
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def _identifier(archive: IO[bytes]) -> LanguageIdentifier:
    """The model of a decompressed archive, built as py3langid builds it."""
    with np.load(archive, allow_pickle=False) as data:
        return LanguageIdentifier(
            np.asarray(data["ptc"]),
            np.asarray(data["pc"]),
            data["classes"].tolist(),
            _to_array(data["nextmove"]),
            data["out_feat"].tolist(),
            norm_probs=True,
            tk_row=_to_array(data["nextmove_row"]),
        )
