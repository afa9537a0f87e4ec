"""The engine reuses the prompt prefix it shares with the previous completion only in whole batches,
so an answer is bit for bit the answer of evaluating the whole prompt (``argus.models.engine_server``)."""

from __future__ import annotations

import numpy as np
import pytest

from argus.models.engine_server import SavedContext, SavedContexts, reusable_prefix


def test_only_whole_batches_of_the_previous_prompt_are_kept():
    prev = list(range(1000))
    # shares 900 tokens: one whole batch of 256 … three
    assert reusable_prefix(prev, 1000, prev[:900] + [-1] * 50, 256) == 768
    assert reusable_prefix(prev, 1000, prev[:900] + [-1] * 50, 512) == 512
    assert reusable_prefix(prev, 1000, prev[:500] + [-1] * 50, 512) == 0  # less than a batch
    assert reusable_prefix(prev, 1000, [-1] + prev[1:], 256) == 0  # differs at the first token


def test_the_previous_answer_and_the_last_prompt_token_are_never_kept():
    evaluated = list(range(1100))  # a 600-token prompt, then its 500-token answer
    assert reusable_prefix(evaluated, 600, evaluated[:1050], 256) == 512  # not into the answer
    assert reusable_prefix(evaluated, 600, evaluated[:512], 256) == 256  # the last token is evaluated
    assert reusable_prefix(evaluated, 600, evaluated[:513], 256) == 512
    assert reusable_prefix(evaluated[:300], 600, evaluated[:600], 256) == 256  # what the state holds
    assert reusable_prefix([], 0, [1, 2, 3], 256) == 0


def _context(tokens: list[int], prompt_len: int, size: int = 10) -> SavedContext:
    return SavedContext(tokens, prompt_len, state=object(), size=size)


def test_the_saved_context_that_keeps_the_most_is_chosen():
    stage1, stage2 = list(range(1000)), list(range(5000, 6000))
    saved = SavedContexts()
    saved.save(_context(stage1 + [7] * 50, 1000), 256)
    saved.save(_context(stage2, 1000), 256)
    assert saved.best(stage1[:900] + [-1] * 40, 256, at_least=0) == (0, 768)
    assert saved.best(stage2[:600] + [-1], 256, at_least=0) == (1, 512)
    assert saved.best(stage2[:600] + [-1], 256, at_least=512) == (-1, 512)  # the live context keeps as much
    assert saved.best([-1] * 900, 256, at_least=0) == (-1, 0)
    assert saved.take(0).evaluated[:1000] == stage1 and saved.saved[-1].evaluated[:1000] == stage1


def test_saved_contexts_keep_one_per_first_batch_and_drop_the_least_recently_used():
    a, b = list(range(2000)), list(range(5000, 7000))
    saved = SavedContexts(limit=3, max_bytes=100)
    saved.save(_context(a[:300], 300), 256)  # offers its first batch
    saved.save(_context(a[:100], 100), 256)  # offers nothing: not kept
    assert len(saved.saved) == 1
    saved.save(_context(a[:900] + [-1] * 300, 1100), 256)  # the same first batch: replaces the first
    assert [c.prompt_len for c in saved.saved] == [1100]
    saved.save(_context(b[:600], 600), 256)
    saved.save(_context(b[:100] + a[:600], 700), 256)  # shares 100 tokens with the one before: both stay
    assert [c.evaluated[0] for c in saved.saved] == [0, 5000, 5000]
    saved.save(_context([9] * 600, 600), 256)  # a fourth: the least recently used goes
    assert [c.evaluated[0] for c in saved.saved] == [5000, 5000, 9]
    saved.take(0)
    saved.save(_context([8] * 600, 600, size=60), 256)  # 10 + 10 + 10 + 60 > 100 bytes
    assert [c.evaluated[0] for c in saved.saved] == [9, 5000, 8]
    saved.save(_context([7] * 600, 600, size=200), 256)  # alone over the budget, still kept
    assert [c.evaluated[0] for c in saved.saved] == [7]


@pytest.mark.integration
def test_a_reused_prefix_gives_the_logits_of_a_whole_evaluation(monkeypatch):
    """SmolLM2 as the engine runs it: the first answer token's logits of prompt B, after prompt A
    (same 1,000-odd-token instructions, another chunk) and its answer, equal B's evaluated alone,
    bit for bit, and only B's tokens after the two whole batches it shares with A are evaluated.
    Then another program's prompt, and B2 (A's instructions again): B2 starts from the saved
    context of B, keeps the same two batches, and its logits are again those of B2 alone."""
    from llama_cpp import Llama

    from argus.models import engine_server
    from argus.models.lm import embedded_gguf_path

    monkeypatch.setattr(Llama, "generate", Llama.generate)  # restored after the test
    whole = Llama.generate
    llm = Llama(model_path=str(embedded_gguf_path()), n_ctx=4096, n_threads=1, n_threads_batch=1,
                logits_all=False, seed=0, verbose=False)  # fmt: skip
    rules = " ".join(f"Rule {i}: every event names its actor and its date." for i in range(90))
    a = llm.tokenize(f"Extract the events. {rules} Chunk: On March 3, 2019, Palmer hired Torres.".encode())
    b = llm.tokenize(f"Extract the events. {rules} Chunk: Two weeks later, Palmer fired Torres.".encode())
    assert reusable_prefix(a, len(a), b, llm.n_batch) == 1024

    def answer(tokens, generate, n=1):
        """Answer ``n`` tokens; the logits the first was picked from."""
        gen = generate(llm, tokens, temp=0.0)
        next(gen)
        logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm.n_vocab(),)).copy()
        for _ in range(n - 1):
            next(gen)
        return logits

    other = llm.tokenize(b"Order the events in time. Events: hired, fired.")  # another program, short
    b2 = llm.tokenize(f"Extract the events. {rules} Chunk: Palmer replaced Torres with a younger man.".encode())
    llm.reset()
    alone = answer(b, whole)
    llm.reset()
    alone2 = answer(b2, whole)

    engine_server._reuse_whole_batches()
    evaluated = []
    whole_eval = llm.eval
    monkeypatch.setattr(llm, "eval", lambda tokens: (evaluated.append(len(tokens)), whole_eval(tokens))[1])
    llm.reset()
    answer(a, Llama.generate, n=8)
    evaluated.clear()
    reused = answer(b, Llama.generate)
    assert evaluated[0] == len(b) - 1024  # two batches were kept …
    assert np.array_equal(reused, alone)  # … and the logits are those of the whole prompt
    evaluated.clear()
    answer(other, Llama.generate, n=4)
    assert evaluated[0] == len(other)  # nothing in common with the live context, nor a saved one
    evaluated.clear()
    restored = answer(b2, Llama.generate)
    assert evaluated[0] == len(b2) - 1024  # the context of B was restored …
    assert np.array_equal(restored, alone2)  # … and the logits are again those of the whole prompt
