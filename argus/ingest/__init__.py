"""Sources of complaint texts: files and folders (``files``), PDFs (``pdf``), sources named on the command
line (``sources``) and CourtListener RECAP (``courtlistener``); ``common`` holds what the readers share.

May import: ``argus.text`` and the foundation modules; never ``graph``, ``gate``, ``designs`` or anything
above them.
"""

from argus.ingest.files import iter_paths, read_text_document

__all__ = ["iter_paths", "read_text_document"]
