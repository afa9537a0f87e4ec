"""ARGUS: source-grounded event knowledge graphs from employment-discrimination complaints.

Python API::

    from argus import ArgusConfig, ArgusPipeline, extract
    ekg = extract("complaint.txt")                       # embedded model, offline
    ekg = extract(text, doc_id="ortiz")                  # the text itself
    cfg = ArgusConfig.load(None, {"lm.default.model": "openai/gpt-4o-mini"})
    ekg = ArgusPipeline(cfg).extract("complaint.txt")
    ekg.graph.events, ekg.sentences, ekg.ledger.totals
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

__version__ = "0.1.0"

#: The modules that moved into the subpackages (docs/layout.md), by their old names. Kept for one release:
#: ``import argus.export`` / ``from argus.export import load_ekg`` give the module that lives at its new place
#: (the same module object, so a monkeypatch through either name patches both). New code imports the new names.
MOVED = {
    "argus.answers": "argus.text.answers",
    "argus.batch": "argus.runs.batch",
    "argus.caption": "argus.text.caption",
    "argus.chunking": "argus.designs.chunking",
    "argus.concurrency": "argus.models.concurrency",
    "argus.contract": "argus.output.contract",
    "argus.designs.sentence.edges": "argus.training.edges",
    "argus.distributed": "argus.runs.distributed",
    "argus.documents": "argus.text.documents",
    "argus.embeddings": "argus.models.embeddings",
    "argus.engine": "argus.models.engine",
    "argus.engine_registry": "argus.models.engine_registry",
    "argus.engine_server": "argus.models.engine_server",
    "argus.evaluation": "argus.runs.evaluation",
    "argus.export": "argus.output.export",
    "argus.fact_eval": "argus.gate.fact_eval",
    "argus.facts": "argus.gate.facts",
    "argus.floor": "argus.designs.floor",
    "argus.grounding": "argus.graph.grounding",
    "argus.ledger": "argus.models.ledger",
    "argus.linearize": "argus.graph.linearize",
    "argus.lm": "argus.models.lm",
    "argus.merge": "argus.graph.merge",
    "argus.pages": "argus.output.pages",
    "argus.preflight": "argus.models.preflight",
    "argus.preprocess": "argus.text.preprocess",
    "argus.response_cache": "argus.models.response_cache",
    "argus.routing": "argus.models.routing",
    "argus.schema": "argus.graph.schema",
    "argus.spans": "argus.output.spans",
    "argus.timeline": "argus.graph.timeline",
    "argus.validation": "argus.graph.validation",
    "argus.view": "argus.output.view",
    "argus.words": "argus.text.words",
}


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers an old module name (``MOVED``) with the module at its new place."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname in MOVED:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module):
        pass


if not any(isinstance(f, _MovedModules) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())  # before any other finder: these names are answered here only

__all__ = ["ArgusConfig", "ArgusPipeline", "DocumentEKG", "extract", "__version__"]


def __getattr__(name):  # lazy: importing argus stays cheap (no DSPy / torch until needed)
    if name == "ArgusConfig":
        from argus.config import ArgusConfig

        return ArgusConfig
    if name == "ArgusPipeline":
        from argus.pipeline import ArgusPipeline

        return ArgusPipeline
    if name == "DocumentEKG":
        from argus.graph.schema import DocumentEKG

        return DocumentEKG
    raise AttributeError(name)


def extract(source, config=None, doc_id=None):
    """Run the pipeline (its configured design, ``extraction.design``) on one complaint and return its EKG.

    ``source``: the complaint's text (a ``str``), a path (a ``pathlib.Path``, or a ``str`` that names a file:
    ``argus.ingest.files.looks_like_path``; a text with a line break is never looked up on disk), or a
    ``RawDocument``. ``doc_id`` names the document (by default the file's stem, or ``text-`` and the
    text's hash)::

        ekg = argus.extract("On March 3, 2021, Acme terminated Ms. Ortiz ...", doc_id="ortiz")
        ekg = argus.extract("complaint.txt")
    """
    from pathlib import Path

    from argus.ingest.files import looks_like_path, read_document, text_document
    from argus.pipeline import ArgusPipeline
    from argus.text.documents import RawDocument

    if isinstance(source, RawDocument):
        raw = source.model_copy(update={"doc_id": doc_id}) if doc_id else source
    elif isinstance(source, Path) or (isinstance(source, str) and looks_like_path(source)):
        raw = read_document(source, doc_id)
    elif isinstance(source, str):
        raw = text_document(source, doc_id)
    else:
        raise TypeError(f"argus.extract takes a text, a path or a RawDocument, not {type(source).__name__}")
    return ArgusPipeline(config).extract(raw)
