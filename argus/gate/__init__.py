"""The fact gate: which sentences of a complaint state facts (a classifier, with an LLM fallback under a
threshold), and its training and measurement.

Holds ``facts`` (the classifiers and ``gate_facts``) and ``fact_eval`` (grouped cross-validation,
calibration, the fallback report).

May import: ``argus.text``, ``argus.models``, ``argus.ingest``, ``argus.graph`` and the foundation modules;
never ``designs``, ``argus.pipeline`` or anything above them.
"""
