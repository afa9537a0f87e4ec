"""The models every stage calls: language models and their local engines, sentence encoders, and what
metering, caching, bounding and checking those calls takes.

Holds ``lm`` (litellm model strings, local servers, the embedded model), ``engine`` / ``engine_registry`` /
``engine_server`` (local GGUF servers, out of process), ``embeddings`` (sentence encoders), ``ledger`` (the cost
ledger), ``response_cache``, ``concurrency`` (bounds and retries), ``preflight`` (every model checked before a
run) and ``routing`` (whether a stage's model is asked where a deterministic part could decide).

May import: the foundation modules of ``argus`` (``errors``, ``paths``, ``config``, ``io``, ``terminal``)
and nothing else of ``argus``. Bottom layer, beside ``argus.text``.
"""
