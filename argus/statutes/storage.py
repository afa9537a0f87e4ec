"""Atomic file output for the statute graph, tables and cache shards (see ``argus.io``)."""

from argus.io import atomic_open
from argus.io import write_bytes_atomic as atomic_write_bytes
from argus.io import write_text_atomic as atomic_write_text

__all__ = ["atomic_open", "atomic_write_bytes", "atomic_write_text"]
