"""ARGUS: source-grounded event knowledge graphs from employment-discrimination complaints.

Python API::

    from argus import ArgusConfig, ArgusPipeline, extract
    ekg = extract("complaint.txt")                       # embedded model, offline
    cfg = ArgusConfig.load(None, {"lm.default.model": "openai/gpt-4o-mini"})
    ekg = ArgusPipeline(cfg).extract("complaint.txt")
    ekg.graph.events, ekg.sentences, ekg.ledger.totals
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["ArgusConfig", "ArgusPipeline", "DocumentEKG", "extract", "__version__"]


def __getattr__(name):  # lazy: importing argus stays cheap (no DSPy / torch until needed)
    if name == "ArgusConfig":
        from argus.config import ArgusConfig

        return ArgusConfig
    if name == "ArgusPipeline":
        from argus.pipeline import ArgusPipeline

        return ArgusPipeline
    if name == "DocumentEKG":
        from argus.schema import DocumentEKG

        return DocumentEKG
    raise AttributeError(name)


def extract(source, config=None):
    """Run the pipeline (its configured design, ``extraction.design``) on one complaint (a path or a
    ``RawDocument``) and return its EKG."""
    from argus.pipeline import ArgusPipeline

    return ArgusPipeline(config).extract(source)
