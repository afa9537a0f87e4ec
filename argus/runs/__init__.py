"""Runs over many documents: batch extraction, the same on Ray, and the evaluation protocol.

Holds ``batch`` (``argus extract`` over a folder: progress, summary, nothing lost), ``distributed``
(``--engine ray``) and ``evaluation`` (``argus eval``).

May import: everything below it (``argus.pipeline``, ``output``, ``experiments``, ``training``, ``designs``,
``gate``, ``graph``, ``ingest``, ``text``, ``models``, the foundation modules); only ``argus.cli`` and the
package's face import it.
"""
