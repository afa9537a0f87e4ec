"""The Event Knowledge Graph: its schema and what is done to a graph once it exists.

Holds ``schema`` (entities, events, temporal and causal edges, the document EKG), ``grounding`` (every
mention and trigger tied to characters of the filing), ``merge`` (mini-graphs into one document graph),
``validation`` (checks and deterministic repair of stage outputs), ``timeline`` (dates and time order) and
``linearize`` (a graph as text for the QA tasks).

May import: ``argus.text``, ``argus.models`` and the foundation modules; never ``ingest``, ``gate``,
``designs`` or anything above them.
"""
