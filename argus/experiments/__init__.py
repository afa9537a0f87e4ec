"""Downstream experiments on the event graphs (``argus experiment <name>``): claim-type
classification (EKG-GNN), clustering, document QA, bar-exam retrieval. Each writes its table as
Markdown and CSV and prints it.

May import: ``argus.pipeline`` and everything below it; never ``training`` (its own line), ``runs`` or
``argus.cli``.
"""
