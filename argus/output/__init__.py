"""What a finished document EKG becomes: files, checks and pages.

Holds ``export`` (JSON, networkx, GraphML; ``load_ekg``), ``contract`` (the output contract, ``argus
validate``), ``view`` (``argus view``: one self-contained HTML page), ``pages`` (the Jinja2 environment the
pages share) and ``spans`` (a text with its spans as nested HTML).

May import: ``argus.text``, ``argus.models``, ``argus.ingest``, ``argus.graph`` and the foundation modules;
never ``designs``, ``argus.pipeline``, ``runs`` or the CLI (output reads graphs, it does not make them).
"""
