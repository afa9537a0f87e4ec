"""The text of a complaint: reading, cleaning and segmenting it, its caption, and the words of a sentence.

Holds ``documents`` (typed documents with spans), ``preprocess`` (OCR cleanup, sections, sentences),
``caption`` (parties, court, case number), ``words`` (lemmas and verb forms) and ``answers`` (short
free-text answers: normalization and token F1).

May import: the foundation modules of ``argus`` (``errors``, ``paths``, ``config``, ``io``, ``terminal``)
and nothing else of ``argus``. Bottom layer, beside ``argus.models``.
"""
