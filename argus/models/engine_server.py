"""Entry point of the managed local engine process: ``llama_cpp.server`` for one GGUF on loopback.

Started by ``argus.models.engine.ManagedServer`` as ``python -m argus.models.engine_server …``; not meant to be
run by hand (``python -m llama_cpp.server`` is the user-facing equivalent). It differs from that
command in five ways:

- it binds 127.0.0.1;
- it serves every ``argus`` process of the user that needs its model file (``argus.models.engine_registry``)
  and exits ``--idle-s`` seconds after the last of them is gone, however they ended (killed,
  crashed, or without running their exit handlers), so an engine is never left behind;
- it computes a completion only while it holds the machine-wide compute lock, so engines of
  different model files take turns instead of spinning against each other on the same cores;
- the model runs on the process's main thread (the thread that loaded it), and HTTP is served
  from a second thread. ``llama_cpp.server`` runs each completion on a worker thread of the
  event loop's pool, where llama.cpp's OpenMP threads stop spinning between tokens: with a JSON
  grammar that made generation about 5 times slower on 2 cores (158 tokens: 8.2 s against 1.7 s);
- a completion reuses the prefix it shares with an earlier prompt only in whole batches
  (:func:`reusable_prefix`), so its logits, and its answer, are bit for bit those of evaluating the
  whole prompt: an answer does not depend on the requests that came before it. Besides the live
  context, a few earlier ones are kept (:class:`SavedContexts`), so that programs that take turns
  (Stage 1 and Stage 2 of each chunk, a judge and the reflection) each find their own prefix.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from argus.models.engine_registry import Registry, compute_turn, engine_threads

_JOBS: "queue.Queue[tuple[Future, object, tuple, dict]]" = queue.Queue()


async def _on_main_thread(func, *args, **kwargs):
    """Drop-in for starlette's ``run_in_threadpool``: run ``func`` on the main thread, await it."""
    future: Future = Future()
    _JOBS.put((future, func, args, kwargs))
    return await asyncio.wrap_future(future)


def reusable_prefix(evaluated: Sequence[int], prompt_len: int, tokens: Sequence[int], n_batch: int) -> int:
    """How many of ``tokens`` (a prompt) to keep from the model's state, whose ``evaluated`` tokens
    start with the previous prompt (``prompt_len`` tokens) and go on with its answer.

    ``Llama.eval`` evaluates a prompt in batches of ``n_batch`` tokens from the first token it lacks,
    and the logits of a prompt evaluated in other pieces differ in the last bits (greedy decoding
    may then pick another token). So only whole batches of the shared prefix are kept, counted from
    the start: every batch of the new prompt is then the batch a whole evaluation computes, on the
    same cache. The previous answer's tokens (evaluated one at a time) are never kept, and at least
    the prompt's last token is evaluated (its logits pick the first answer token)."""
    limit = min(prompt_len, len(evaluated), len(tokens) - 1)
    shared = 0
    while shared < limit and evaluated[shared] == tokens[shared]:
        shared += 1
    return shared - shared % n_batch if n_batch > 0 else 0


#: Saved contexts an engine keeps besides its live one, and the memory they may take in all.
#: A context is about 23 kB per evaluated token for SmolLM2-135M (50 MB at 2,150 tokens).
SAVED_CONTEXTS = 4
SAVED_CONTEXT_BYTES = 512 * 2**20


@dataclass
class SavedContext:
    """An engine context as a completion left it: the tokens evaluated, how many were the prompt,
    and llama.cpp's state (``size`` bytes of ``state``)."""

    evaluated: list[int]
    prompt_len: int
    state: object
    size: int


class SavedContexts:
    """Earlier contexts of one model, the most recently used last, at most one per first batch.

    A completion starts from the context that lets it keep the most whole batches of its prompt:
    the live one, or a saved one, restored. When a prompt shares no whole batch with the live
    context (another program's: DSPy prompts of different signatures differ in their first
    tokens), the live context is saved first; a saved context that begins with the same batch as a
    newer one goes (the Stage 1 prompts of two chunks differ only after their shared
    instructions). Beyond ``limit`` contexts or ``max_bytes`` the least recently used go.

    Saving or restoring 50 MB takes about 40 ms; keeping 1,536 tokens of a 2,200-token prompt
    saves about 8 s on 2 cores. Restored, a context is the state its prompt left, so what is kept
    of it is what :func:`reusable_prefix` would keep had that prompt been the previous one: the
    logits stay those of a whole evaluation."""

    def __init__(self, limit: int = SAVED_CONTEXTS, max_bytes: int = SAVED_CONTEXT_BYTES) -> None:
        self.limit, self.max_bytes = limit, max_bytes
        self.saved: list[SavedContext] = []

    def best(self, tokens: Sequence[int], n_batch: int, at_least: int) -> tuple[int, int]:
        """(index of the saved context that keeps the most of ``tokens``, more than ``at_least``; how
        many it keeps), or (-1, ``at_least``) when none keeps more."""
        best, kept = -1, at_least
        for i, saved in enumerate(self.saved):
            k = reusable_prefix(saved.evaluated, saved.prompt_len, tokens, n_batch)
            if k > kept:
                best, kept = i, k
        return best, kept

    def save(self, context: SavedContext, n_batch: int) -> None:
        """Keep ``context`` instead of any that begins with the same batch, unless its prompt is less
        than a batch (a later prompt could keep none of it)."""
        if min(context.prompt_len, len(context.evaluated)) < n_batch:
            return
        first = context.evaluated[:n_batch]
        self.saved = [c for c in self.saved if c.evaluated[:n_batch] != first]
        self.saved.append(context)
        while len(self.saved) > self.limit or (
            len(self.saved) > 1 and sum(c.size for c in self.saved) > self.max_bytes
        ):
            self.saved.pop(0)

    def take(self, index: int) -> SavedContext:
        """A saved context, now the most recently used (it stays saved)."""
        context = self.saved.pop(index)
        self.saved.append(context)
        return context


def _reuse_whole_batches() -> None:
    """Make ``Llama.generate`` (every completion goes through it) keep only :func:`reusable_prefix`
    of an earlier prompt, instead of llama-cpp-python's any shared prefix with the previous one,
    starting from the live context or from one of :class:`SavedContexts`.

    A completion of a prompt that shares 2,039 of its 2,208 tokens with the one before took 6 s
    instead of 14.5 s (1,536 tokens kept; SmolLM2-135M, 1 thread): the Stage 1 calls of a batch
    share their instructions, and so do the Stage 2 calls between them. The answers are those of a
    whole evaluation (``tests/test_engine_prefix.py`` compares the logits bit for bit)."""
    import ctypes

    import llama_cpp
    from llama_cpp import Llama

    whole = Llama.generate

    def generate(self, tokens, *args, **kwargs):
        if kwargs.get("reset", True):
            tokens = list(tokens)
            n_batch = self.n_batch
            prompt_len = getattr(self, "_argus_prompt_len", 0)
            evaluated = self._input_ids.tolist()
            live = reusable_prefix(evaluated, prompt_len, tokens, n_batch)
            saved = self.__dict__.setdefault("_argus_saved", SavedContexts())
            index, kept = saved.best(tokens, n_batch, live)
            restore = saved.take(index) if index >= 0 else None
            if live < n_batch and min(prompt_len, len(evaluated)) >= n_batch:
                # another program's prompt: keep this context for that program's next prompt
                size = llama_cpp.llama_state_get_size(self._ctx.ctx)
                state = (ctypes.c_uint8 * size)()
                size = llama_cpp.llama_state_get_data(self._ctx.ctx, state, size)
                saved.save(SavedContext(evaluated, prompt_len, state, size), n_batch)
            if restore is not None:
                if llama_cpp.llama_state_set_data(self._ctx.ctx, restore.state, restore.size) != restore.size:
                    raise RuntimeError("the engine could not restore a saved context")
                self.input_ids[: len(restore.evaluated)] = restore.evaluated
            self.n_tokens = kept  # 0 is ``reset``; llama-cpp-python's own prefix match then keeps no more
            self._argus_prompt_len = len(tokens)
        return whole(self, tokens, *args, **kwargs)

    Llama.generate = generate


def _serve_jobs(registry_dir: Path) -> None:
    """Answer the queued requests one at a time, in arrival order (each client process has at most
    one call in flight, so processes take turns), each under the machine-wide compute lock."""
    while True:
        future, func, args, kwargs = _JOBS.get()
        if not future.set_running_or_notify_cancel():
            continue
        try:
            with compute_turn(registry_dir):
                result = func(*args, **kwargs)
            future.set_result(result)
        except BaseException as exc:  # handed to the request that asked
            future.set_exception(exc)


def _exit_when_unused(registry: Registry, idle_s: float, every_s: float = 0.25) -> None:
    """Exit ``idle_s`` after the last client is gone, or at once if another engine took the entry.

    The decision to exit is taken under the entry's lock: a process registering meanwhile either
    registered before (and the engine stays) or finds the entry gone (and starts a new engine)."""
    me = os.getpid()

    def watch() -> None:
        idle_since = None
        while True:
            time.sleep(every_s)
            record = registry.read()
            if record is not None and record.pid != me:
                os._exit(0)
            if registry.clients():
                idle_since = None
                continue
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since < idle_s:
                continue
            with registry.locked(timeout=0.5) as held:
                if held and not registry.clients():
                    registry.remove(me)
                    os._exit(0)

    threading.Thread(target=watch, name="argus-idle-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m argus.models.engine_server")
    parser.add_argument("--model", required=True, help="GGUF file")
    parser.add_argument("--alias", required=True, help="model name the server answers to")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n-ctx", type=int, default=8192)
    parser.add_argument("--n-threads", type=int, default=0, help="0: every usable core but one")
    parser.add_argument("--registry-dir", required=True, help="the engine registry (argus.models.engine_registry)")
    parser.add_argument("--key", required=True, help="this engine's entry in the registry")
    parser.add_argument("--idle-s", type=float, default=5.0, help="exit this long after the last client is gone")
    args = parser.parse_args(argv)
    registry = Registry(args.key, Path(args.registry_dir))
    _exit_when_unused(registry, args.idle_s)

    import llama_cpp.server.app as server_app
    import uvicorn
    from llama_cpp.server.settings import ModelSettings, ServerSettings

    threads = args.n_threads or engine_threads()
    _reuse_whole_batches()
    server_app.run_in_threadpool = _on_main_thread  # completions (non-streaming) on the main thread
    app = server_app.create_app(
        server_settings=ServerSettings(host="127.0.0.1", port=args.port),
        model_settings=[
            # logits_all=False: the server's default (True) computes logits for every prompt token,
            # which doubles the time of a long prompt and adds hundreds of MB
            ModelSettings(model=args.model, model_alias=args.alias, n_ctx=args.n_ctx, n_threads=threads,
                          n_threads_batch=threads, seed=0, logits_all=False, verbose=False)
        ],
    )
    http = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False))
    # HTTP on a daemon thread (it installs no signal handlers there): SIGTERM ends the process
    threading.Thread(target=http.run, name="argus-http", daemon=True).start()
    _serve_jobs(registry.dir)


if __name__ == "__main__":
    main()
