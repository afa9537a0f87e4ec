"""Atomic file output: a reader never sees a half-written file, and a crash leaves the old one.

Everything the project writes (EKGs, GraphML, tables, graphs, cache shards, fetched complaints)
goes through ``atomic_open``: a temporary file beside the target, fsync, then ``os.replace``.
Append-only logs (the cost ledger) are the exception: ``append_jsonl_lines`` appends lines under
an exclusive ``flock`` (a failed write is cut back), and ``read_jsonl`` skips a line torn by a
killed writer.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", encoding: str | None = "utf-8", newline: str | None = None) -> Iterator[IO]:
    """Open a temporary file that replaces ``path`` only when the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # the name is known before the file exists, so that an interrupt (a SIGTERM turned KeyboardInterrupt)
    # landing while it is created still removes it (with mkstemp one inside it left the file behind)
    tmp = str(path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # (another's: never ours to remove)
            tmp = None
            raise
        binary = "b" in mode
        with os.fdopen(fd, mode, encoding=None if binary else encoding, newline=None if binary else newline) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        if tmp is not None:
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


# ----------------------------------------------------------------------------- append-only JSONL
#
# Logs that grow line by line (the cost ledger, campaign records) cannot be rewritten atomically
# on every entry. Instead lines are appended with ``O_APPEND`` under an exclusive ``flock`` of the
# file, so concurrent appenders (threads or processes) never interleave within a line; a write
# that fails midway (a full disk, a file-size limit) is cut back to where it began, and readers
# skip a line torn by a killed writer instead of failing.


def append_jsonl_lines(path: str | Path, lines: list[str]) -> None:
    """Append ``lines`` (each without its newline) to ``path`` together, under an exclusive
    ``fcntl.flock`` of the file: another appender's lines never land inside or between them.

    The file is created if missing. If it ends without a newline (a line torn by a killed writer),
    a newline is written first, so the torn line stays alone on its line and these parse. If the
    write fails (``OSError``: a full disk, ``EFBIG``), what it wrote is truncated away before the
    error is raised: no torn line is left behind.
    """
    import fcntl

    if any("\n" in line for line in lines):
        raise ValueError("a JSONL line cannot contain a newline")
    if not lines:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd is closed
        except OSError as exc:  # a filesystem without locks: one O_APPEND write is all there is
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
        size = os.fstat(fd).st_size
        torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
        data = (b"\n" if torn else b"") + "".join(line + "\n" for line in lines).encode("utf-8")
        try:
            while data:  # a regular file takes it whole; a short write (full disk) is finished or raises
                written = os.write(fd, data)
                data = data[written:]
        except BaseException:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)  # (shrinking needs no space)
            raise
    finally:
        os.close(fd)


def append_jsonl_line(path: str | Path, line: str) -> None:
    """Append one line (``line`` without its newline) to ``path``: ``append_jsonl_lines``."""
    append_jsonl_lines(path, [line])


def iter_jsonl_lines(path: str | Path) -> Iterator[str]:
    """The non-blank lines of a JSONL file, decoded one by one (a torn multi-byte character spoils
    only its own line: it comes back with a replacement character and will not parse)."""
    for raw in Path(path).read_bytes().split(b"\n"):
        if raw.strip():
            yield raw.decode("utf-8", errors="replace")


def warn_skipped_lines(path: str | Path, skipped: int) -> None:
    """One warning (logger ``argus``) for the unreadable lines of a JSONL file, if any."""
    if skipped:
        import logging

        logging.getLogger("argus").warning(
            "%s: skipped %d unreadable line%s (torn by an interrupted write?); kept the rest",
            path, skipped, "" if skipped == 1 else "s",
        )


def read_jsonl(path: str | Path, parse: Callable[[str], Any] | None = None) -> list:
    """The records of a JSONL file, one per line, in order: JSON objects, or what ``parse`` makes of
    each line (``LedgerEntry.model_validate_json``, say).

    Lines that do not parse — not a JSON object, or ``parse`` raises ``ValueError`` (a torn last line
    of a killed writer, say) — are skipped, with one warning naming the file and the number of
    skipped lines. A missing file raises ``FileNotFoundError``.
    """
    out: list = []
    skipped = 0
    for line in iter_jsonl_lines(path):
        try:
            obj = parse(line) if parse is not None else json.loads(line)
        except ValueError:  # pydantic's ValidationError is one too
            obj = None
        if obj is not None and (parse is not None or isinstance(obj, dict)):
            out.append(obj)
        else:
            skipped += 1
    warn_skipped_lines(path, skipped)
    return out


class ProcessDiskCache:
    """A ``diskcache.Cache`` in a folder, shared by processes: opened on first use (or at ``configure``),
    once per process — a forked child opens its own connection — and guarded by a lock. Errors of the
    store (a damaged file, a full disk) reach the caller, whose fallback they are."""

    def __init__(self, size_limit: int | None = None):
        import threading

        self._lock = threading.Lock()
        self._size_limit = size_limit
        self._disk = None
        self._pid: int | None = None
        self.directory: Path | None = None

    def configure(self, directory: str | Path | None) -> None:
        """Keep entries under ``directory`` (``None``: no store); opened on first use."""
        directory = Path(directory).expanduser().resolve() if directory is not None else None
        with self._lock:
            if directory == self.directory:
                return
            old, self._disk, self.directory = self._disk, None, directory
            if old is not None and self._pid == os.getpid():
                old.close()

    def _connection(self):
        """This process's connection, or None without a folder; under the lock."""
        if self.directory is None:
            return None
        if self._disk is None or self._pid != os.getpid():
            import diskcache

            self.directory.mkdir(parents=True, exist_ok=True)
            kwargs = {} if self._size_limit is None else {"size_limit": self._size_limit}
            self._disk = diskcache.Cache(str(self.directory), **kwargs)
            self._pid = os.getpid()
        return self._disk

    def get(self, key: str) -> Any:
        with self._lock:
            disk = self._connection()
        return None if disk is None else disk.get(key)

    def set(self, key: str, value: Any) -> None:
        with self._lock:
            disk = self._connection()
        if disk is not None:
            disk.set(key, value)
