"""Training the sentence design's learned heads (``argus train-events``): the type and trigger heads, the
learned parts of the heads file, and their cross-validation by complaint.

Holds ``heads`` (the labelled complaints, both heads' C chosen by grouped cross-validation,
``train_event_heads``, ``cross_validate``, and the parts of the heads file in training order, ``PARTS``),
``pairs`` (the design's own graphs of the training complaints, made by the whole pipeline and aligned to
gold, and the rows and fitting of the pair heads) and one module per learned part: ``entities`` (the
entity rules' settings), ``types`` (the trigger lexicon), ``occurrences`` (the same-occurrence head) and
``edges`` (the temporal and causal heads). What the heads file holds is read where it is used, in the
design (``argus.designs.sentence``): extraction never imports this package.

May import: ``argus.pipeline`` (a part learns from the design's own graphs of the training complaints)
and everything below it; never ``experiments`` (its own line), ``runs`` or the CLI; only ``argus.cli``
and the bench scripts import it.
"""
