"""The ways ``ArgusPipeline`` turns one complaint into its EKG, one module each.

``chunked``    LLM chunking, Stage 1 and Stage 2 per chunk, merging and the resolver;
``sentence``   at most one event per fact sentence, by choices (encoder heads, the choice program);
``baselines``  the one-shot baseline and the no-model floor;
``run``        what every design shares: a document's bookkeeping, its opening (read, preprocess,
               fact gate) and the ``DocumentEKG`` assembled at the end.

Each takes the pipeline as its first argument and calls its stages through it, so a stage replaced
on the pipeline is the one the design runs. Beside them: ``floor`` (the no-model event graph every
design is read against) and ``chunking`` (validation and repair of a chunk plan).

May import: ``argus.gate``, ``argus.graph``, ``argus.ingest``, ``argus.text``, ``argus.models`` and the
foundation modules; never ``argus.pipeline`` (a design gets the pipeline as its first argument),
``output``, ``experiments``, ``runs`` or the CLI.
"""
