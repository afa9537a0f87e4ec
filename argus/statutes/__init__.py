"""German federal statutes as a knowledge graph, with structure-driven retrieval (see docs/statutes.md)."""
