"""What a finished document EKG becomes: files, checks and pages.

Holds ``export`` (JSON, networkx, GraphML; ``load_ekg``), ``contract`` (the output contract, ``argus
validate``), ``view`` (``argus view``: one self-contained HTML page), ``pages`` (the Jinja2 environment the
pages share), ``spans`` (a text with its spans as nested HTML), ``gold_edits`` (a graph as SPEC gold and the
corrections made to it) and ``annotate`` (``argus annotate serve``: the correction page's server, which checks
what it saves with ``metrics.gold.validate``).

May import: ``argus.text``, ``argus.models``, ``argus.ingest``, ``argus.graph`` and the foundation modules;
never ``designs``, ``argus.pipeline``, ``runs`` or the CLI (output reads graphs, it does not make them).
"""
