"""Sources of complaint texts: files and folders (``files``) and CourtListener RECAP (``courtlistener``)."""

from argus.ingest.files import iter_paths, read_text_document

__all__ = ["iter_paths", "read_text_document"]
