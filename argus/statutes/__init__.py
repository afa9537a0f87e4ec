"""German federal statutes as a knowledge graph, with structure-driven retrieval (see docs/statutes.md).

A domain of its own beside the complaint pipeline. May import: ``argus.models`` (sentence encoders) and the
foundation modules; nothing of the complaint pipeline.
"""
