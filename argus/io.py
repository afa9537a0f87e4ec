"""Atomic file output: a reader never sees a half-written file, and a crash leaves the old one.

Everything the project writes (EKGs, GraphML, tables, graphs, cache shards, fetched complaints)
goes through ``atomic_open``: a temporary file beside the target, fsync, then ``os.replace``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", encoding: str | None = "utf-8", newline: str | None = None) -> Iterator[IO]:
    """Open a temporary file that replaces ``path`` only when the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        binary = "b" in mode
        with os.fdopen(fd, mode, encoding=None if binary else encoding, newline=None if binary else newline) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text_atomic(path: str | Path, text: str, *, newline: str | None = None) -> Path:
    with atomic_open(path, "w", newline=newline) as fh:
        fh.write(text)
    return Path(path)


def write_bytes_atomic(path: str | Path, data: bytes) -> Path:
    with atomic_open(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def write_json_atomic(path: str | Path, data, *, indent: int | None = 1) -> Path:
    return write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=indent) + "\n")
