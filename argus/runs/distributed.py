"""Batch extraction on Ray: documents fan out to pipeline actors, outputs are written by the driver.

``argus extract DOCS --out OUT --engine ray`` (``run_batch_ray``) runs the batch that ``argus extract``
runs locally (``argus.runs.batch.run_batch``) on Ray Data, on one machine or a cluster:

- the driver (the machine where you type the command) reads the inputs; a file that cannot be read
  is recorded in ``OUT/errors.jsonl`` there and never goes to Ray;
- each readable document travels as its text (a ``RawDocument``), so the nodes need no access to
  the input files, through ``ray.data.from_items(...).map_batches(PipelineActor, ...)``;
- each ``PipelineActor`` builds one ``ArgusPipeline`` from the configuration's JSON when it starts and
  runs ``argus.runs.batch.extract_document`` for every document it is given: up to ``--concurrency``
  (default: the configuration's ``concurrency.documents``) documents at once and at most
  ``--concurrency`` (default ``concurrency.max_in_flight``) LM calls in flight *per actor*; the
  batch runs ``--actors`` (default 2) actors;
- results stream back to the driver as they complete, and the driver writes them through
  ``argus.runs.batch.BatchWriter`` exactly as the local engine does: ``OUT/<doc_id>.ekg.json`` and
  ``.graphml``, ``OUT/ledger.jsonl`` (every document's LM calls), ``OUT/errors.jsonl``,
  ``OUT/summary.csv`` in input order. **Only the driver writes outputs**; OUT need not exist on
  the other nodes.

On one machine (a local Ray runtime is started for the batch and stopped after it)::

    argus extract complaints/ --out out --engine ray --actors 4 --concurrency 8

On a cluster::

    # on the head node
    ray start --head --port=6379
    # on every other node
    ray start --address=<head-ip>:6379
    # on the head node (or any node of the cluster): the driver joins the running cluster
    argus extract complaints/ --out out --engine ray --address auto --actors 8
    # from a machine outside the cluster, through Ray Client (port 10001 of the head node)
    argus extract complaints/ --out out --engine ray --address ray://<head-ip>:10001

What the nodes need: ``argus-kg`` installed (``pip install 'argus-kg[scale]'``, the same version as the
driver, with the same Python and Ray versions: the working directory is *not* shipped to the
cluster), and whatever the configured models need there: the embedded model's files when a stage
uses ``local/…`` (each actor then runs its own engine, so give each node the cores for it), network
access to hosted APIs or to the ``api_base`` servers named in the configuration (a ``127.0.0.1``
server is each node's own loopback). Paths in the configuration (``cache_dir``, a fact classifier's
directory) and variables such as ``ARGUS_DATA_ROOT`` or ``HF_HOME`` are read on each node, in the
environment ``ray start`` was run with.

Environment: the actors get the variables the CLI sets (``TOKENIZERS_PARALLELISM``,
``LITELLM_LOCAL_MODEL_COST_MAP`` and, when set on the driver, the Hugging Face offline switches)
through Ray's ``runtime_env``. Credentials (the variables named by ``api_key_env`` and the model
providers' own, ``OPENAI_*``, ``ANTHROPIC_*``, …, as set on the driver) reach the actors in their
constructor arguments instead, because Ray writes a ``runtime_env`` into its log files; argus
never writes them to any file or log.

Failures: a document whose extraction fails is that document's error record, as locally. An actor
that dies (a crash, the OOM killer, a lost node) is replaced and its documents are retried (up to
``TASK_ATTEMPTS`` times in all); documents still without a result are tried once more one at a
time per actor (so that one document that kills its actor cannot take others with it), and then
recorded in ``errors.jsonl`` with the reason. If Ray itself fails (the actors cannot start, the
cluster goes away) the documents without a result are recorded as failed with Ray's reason; what
was written before stays written. The driver claims each document it sends (``argus.runs.batch.Claims``:
a document claimed by another run on OUT is skipped), a write that fails (a full disk) fails that
document only, and SIGTERM or Ctrl-C stops the batch as locally (``argus.runs.batch.BatchInterrupted``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import threading
import time
import warnings
from pathlib import Path

from rich.console import Console

from argus.runs.batch import (
    BatchReport,
    BatchWriter,
    Claims,
    DocumentResult,
    batch_progress,
    claim_document,
    extract_document,
    interrupted,
    pending_sources,
    print_batch_summary,
    release_free_memory,
    sigterm_as_interrupt,
)
from argus.config import PIPELINE_STAGES, ArgusConfig
from argus.errors import ConfigError

__all__ = ["DEFAULT_ACTORS", "TASK_ATTEMPTS", "PipelineActor", "credential_env", "run_batch_ray", "worker_env"]

#: pipeline actors when ``actors`` is not given
DEFAULT_ACTORS = 2
#: attempts of one document's task when the actor running it dies (Ray's ``max_task_retries`` + 1)
TASK_ATTEMPTS = 3
#: variables the CLI and ``argus.models.lm`` set, with the values they set (the driver's own value wins)
ENV_KNOBS = {"TOKENIZERS_PARALLELISM": "false", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
#: variables passed on only when the driver has them (set by ``argus.models.embeddings`` for the embedded encoder)
ENV_PASSTHROUGH = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
#: litellm provider → the prefixes (ending in ``_``) or exact names of the variables it reads credentials from
PROVIDER_ENV = {
    "openai": ("OPENAI_",),
    "text-completion-openai": ("OPENAI_",),
    "azure": ("AZURE_",),
    "azure_ai": ("AZURE_AI_", "AZURE_"),
    "bedrock": ("AWS_",),
    "sagemaker": ("AWS_",),
    "gemini": ("GEMINI_", "GOOGLE_API_KEY"),
    "vertex_ai": ("VERTEXAI_", "VERTEX_"),
    "together_ai": ("TOGETHERAI_", "TOGETHER_"),
    "huggingface": ("HUGGINGFACE_", "HF_TOKEN"),
}
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_SCALE_HINT = "pip install 'argus-kg[scale]'"


# ============================================================================ environment


class _Secrets:
    """Credential variables on their way to the actors (in their constructor arguments, never in a
    ``runtime_env``, which Ray logs). Its ``repr`` names the variables, never their values."""

    def __init__(self, values: dict[str, str]):
        self._values = dict(values)

    @property
    def names(self) -> list[str]:
        return sorted(self._values)

    def apply(self) -> None:
        os.environ.update(self._values)

    def __repr__(self) -> str:
        return f"<credentials: {', '.join(self.names) or 'none'}>"

    __str__ = __repr__


def _provider(model: str) -> str | None:
    try:
        from litellm import get_llm_provider

        return get_llm_provider(model)[1]
    except Exception:
        return model.split("/", 1)[0] if "/" in model else None


def credential_env(config: ArgusConfig, environ=None) -> dict[str, str]:
    """The driver's variables holding the credentials the pipeline's models read: each stage's
    ``api_key_env`` and its provider's own variables (``OPENAI_*`` for ``openai/…``, …). ``local/``
    models read none."""
    environ = os.environ if environ is None else environ
    names: set[str] = set()
    prefixes: set[str] = set()
    for stage in (*PIPELINE_STAGES, "sentence", "oneshot"):
        spec = config.lm.for_stage(stage)
        if spec.api_key_env:
            names.add(spec.api_key_env)
        if spec.model.startswith("local/"):
            continue
        provider = _provider(spec.model)
        if not provider:
            continue
        for p in PROVIDER_ENV.get(provider, (re.sub(r"[^A-Z0-9]+", "_", provider.upper()) + "_",)):
            (prefixes if p.endswith("_") else names).add(p)
    return {k: v for k, v in environ.items()
            if v and (k in names or any(k.startswith(p) for p in prefixes))}


def worker_env(environ=None) -> dict[str, str]:
    """The non-secret variables the actors run with (their ``runtime_env``)."""
    environ = os.environ if environ is None else environ
    env = {k: environ.get(k) or default for k, default in ENV_KNOBS.items()}
    env.update({k: environ[k] for k in ENV_PASSTHROUGH if environ.get(k)})
    return env


# ============================================================================ the actor


class PipelineActor:
    """One configured ``ArgusPipeline`` in a Ray actor; called with batches of documents (one
    document per batch as ``run_batch_ray`` sends them, several batches at once when the pool allows
    it). Returns each document's ``DocumentResult.to_json()`` as a JSON string, never an exception."""

    def __init__(self, config_json: str, method: str = "staged", concurrency: int | None = None,
                 env: dict[str, str] | None = None, secrets: _Secrets | None = None):
        for k, v in (env or {}).items():  # the runtime_env set them already; Ray Client or a bare actor may not
            os.environ.setdefault(k, v)
        if secrets is not None:
            secrets.apply()
        from argus.pipeline import ArgusPipeline

        self.method = method
        self.pipe = ArgusPipeline(ArgusConfig.model_validate_json(config_json))
        if concurrency is not None:
            self.pipe.set_concurrency(concurrency)

    def __call__(self, batch: dict) -> dict:
        import numpy as np

        indexes, results = [], []
        for index, label, document in zip(batch["index"], batch["label"], batch["document"]):
            indexes.append(int(index))
            results.append(json.dumps(self.run(int(index), str(label), str(document)), ensure_ascii=False))
        return {"index": np.array(indexes, dtype=np.int64), "result": np.array(results, dtype=object)}

    def run(self, index: int, label: str, document_json: str) -> dict:
        from argus.text.documents import RawDocument

        t0 = time.perf_counter()
        doc_id = None
        try:
            document = RawDocument.model_validate_json(document_json)
            doc_id = document.doc_id
            result = extract_document(self.pipe, index, label, document, self.method)
        except Exception as exc:  # an OSError of this node (its cache disk, …) is this document's failure
            result = DocumentResult(index, label, doc_id, None,
                                    {"source": label, "doc_id": doc_id, "error": type(exc).__name__,
                                     "message": f"on a Ray worker: {exc}", "unexpected": True},
                                    [], time.perf_counter() - t0)
        data = result.to_json()
        del result
        release_free_memory()  # as the local engine does after each document
        return data


# ============================================================================ the driver


def _import_ray():
    try:
        import ray
        import ray.data  # noqa: F401  (needs pyarrow: the [data] extra)
    except ImportError as exc:
        raise ConfigError(f"--engine ray needs Ray Data, which is not installed ({exc}); {_SCALE_HINT}") from exc
    return ray


@contextlib.contextmanager
def _keeping_sigterm_handler():
    """Put back the SIGTERM handler the block replaced: ``ray.init`` installs its own in the main
    thread (``sys.exit(15)``), over the batch's (``argus.runs.batch.sigterm_as_interrupt``), which
    a SIGTERM'd batch needs to stop as a local one does (``BatchInterrupted``, exit 143)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if handler is not None and signal.getsignal(signal.SIGTERM) is not handler:
            signal.signal(signal.SIGTERM, handler)


@contextlib.contextmanager
def _ray_runtime(ray, address: str | None):
    """Connect to ``address`` (``auto``, ``ray://host:10001``, ``host:6379``) or start a local runtime;
    disconnect / stop afterwards only what this call started."""
    if ray.is_initialized():
        yield
        return
    with _keeping_sigterm_handler():
        try:
            if address:
                ray.init(address=address, log_to_driver=False)
            else:
                os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
                ray.init(address="local", num_cpus=os.cpu_count(), include_dashboard=False,
                         ignore_reinit_error=True, log_to_driver=False)
        except Exception as exc:
            where = f"the Ray cluster at {address}" if address else "a local Ray runtime"
            raise ConfigError(f"could not start or reach {where}: {type(exc).__name__}: {_clean(exc)}") from exc
    try:
        yield
    finally:
        ray.shutdown()


@contextlib.contextmanager
def _data_context(ray):
    """Ray Data settings for this batch (restored afterwards): no Ray progress bars (ours runs), and a
    task that failed on every attempt loses its document, not the dataset."""
    ctx = ray.data.DataContext.get_current()
    settings = {"max_errored_blocks": -1, "enable_progress_bars": False, "print_on_execution_start": False}
    saved = {k: getattr(ctx, k) for k in settings if hasattr(ctx, k)}
    for k in saved:
        setattr(ctx, k, settings[k])
    try:
        yield
    finally:
        for k, v in saved.items():
            setattr(ctx, k, v)


class _ErrorLog(logging.Handler):
    """What Ray Data reports when it gives up on a task (it does not say which document's)."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and len(self.messages) < 20:
            self.messages.append(f"{type(exc).__name__}: {_clean(exc)}")


def _not_our_progress_bar(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Progress bars disabled")  # (ours runs instead)


@contextlib.contextmanager
def _ray_data_errors():
    log = _ErrorLog()
    logger = logging.getLogger("ray.data")
    progress_logger = logging.getLogger("ray.data._internal.progress")
    logger.addHandler(log)
    progress_logger.addFilter(_not_our_progress_bar)
    try:
        yield log
    finally:
        logger.removeHandler(log)
        progress_logger.removeFilter(_not_our_progress_bar)


def _clean(exc, limit: int = 600) -> str:
    text = _ANSI.sub("", str(exc)).strip()
    return text if len(text) <= limit else text[:limit] + "…"


def _stream(ray, docs: dict, *, config_json: str, method: str, concurrency: int | None, actors: int,
            docs_per_actor: int, env: dict, secrets: _Secrets):
    """``DocumentResult``s of ``docs`` ({index: (label, RawDocument)}) as the actors finish them."""
    from ray.data import ActorPoolStrategy

    items = [{"index": i, "label": label, "document": doc.model_dump_json()}
             for i, (label, doc) in sorted(docs.items())]
    size = max(1, min(actors, len(items)))
    cpus = float(ray.cluster_resources().get("CPU", 1.0))
    num_cpus = max(0.05, min(1.0, cpus / size))  # the whole pool fits; the work waits on LM calls, mostly
    compute = ActorPoolStrategy(size=size, max_tasks_in_flight_per_actor=docs_per_actor,
                                max_concurrent_calls_per_actor=docs_per_actor,
                                enable_true_multi_threading=docs_per_actor > 1)
    ds = ray.data.from_items(items, override_num_blocks=len(items))  # one document per block: per-document failures
    with warnings.catch_warnings():
        # max_restarts / max_task_retries have no named parameter in Ray 2.60 (ray_remote_args are deprecated)
        warnings.simplefilter("ignore", DeprecationWarning)
        ds = ds.map_batches(
            PipelineActor,
            fn_constructor_kwargs={"config_json": config_json, "method": method, "concurrency": concurrency,
                                   "env": env, "secrets": secrets},
            batch_size=1, batch_format="numpy", compute=compute, num_cpus=num_cpus,
            udf_modifying_row_count=False, runtime_env={"env_vars": env},
            max_restarts=-1, max_task_retries=TASK_ATTEMPTS - 1,
        )
    for row in ds.iter_rows():
        yield DocumentResult.from_json(json.loads(row["result"]))


def run_batch_ray(
    paths,
    out_dir: str | Path,
    config: ArgusConfig | None = None,
    *,
    method: str = "staged",
    skip_existing: bool = False,
    graphml: bool = True,
    concurrency: int | None = None,
    address: str | None = None,
    actors: int | None = None,
    console: Console | None = None,
    since: float | None = None,
) -> BatchReport:
    """Extract every document under ``paths`` into ``out_dir`` on Ray (see the module docstring):
    ``actors`` pipeline actors (default 2), each with ``concurrency`` documents and LM calls in flight
    (default: the configuration's ``concurrency.documents`` / ``max_in_flight``); ``address`` is the
    cluster (``auto``, ``ray://head:10001``; default: a local runtime for this batch). The outputs
    are the local engine's (``argus.runs.batch.run_batch``, ``since`` included), written by this process only."""
    ray = _import_ray()
    config = config or ArgusConfig()
    if concurrency is not None and concurrency < 1:
        raise ConfigError(f"concurrency must be at least 1, not {concurrency}")
    if actors is not None and actors < 1:
        raise ConfigError(f"actors must be at least 1, not {actors}")
    since = time.time() if since is None else since
    console = console or Console(stderr=True)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    claims = Claims(out)  # taken by the driver for the documents it sends, released as each is written
    writer = BatchWriter(out, graphml=graphml, console=console, claims=claims)
    todo = pending_sources(paths, out, skip_existing, console, writer.report.skipped)
    _raise_fd_limit(len(todo))  # every document sent holds its claim's descriptor until it is written
    if not todo and not writer.report.skipped:
        console.print("[yellow]no input files[/yellow]")
    try:
        with sigterm_as_interrupt(), batch_progress(console) as progress:
            task = progress.add_task("documents", total=len(todo), doc="")
            writer.console = progress.console

            def write(result: DocumentResult) -> None:
                writer.write(result)
                progress.update(task, doc=Path(result.label).name)
                progress.advance(task)

            docs = {}
            for i, label, item in todo:  # unreadable inputs: recorded here, never sent to Ray
                if isinstance(item, BaseException):
                    write(extract_document(None, i, label, item, method))
                elif (skipped := claim_document(claims, out, i, label, item, skip_existing=skip_existing,
                                                since=since)) is not None:
                    write(skipped)
                else:
                    docs[i] = (label, item)
            if docs:
                with _ray_runtime(ray, address):
                    _run_on_ray(ray, docs, config, method=method, concurrency=concurrency,
                                actors=actors or DEFAULT_ACTORS, write=write, console=progress.console)
    except KeyboardInterrupt as exc:
        claims.release_all(close=True)
        raise interrupted(exc, len(writer.report.rows), len(todo)) from None
    finally:
        claims.release_all(close=True)
    print_batch_summary(console, writer.report, out)
    return writer.report


def _raise_fd_limit(documents: int) -> None:
    """Raise this process's soft limit of open files towards its hard limit, as ``ray.init`` does
    (to 65,536, or more for a batch of more documents), before the batch's claims are taken: the
    driver claims every document it sends to Ray at once, and each claim holds a descriptor until
    the document is written, so under a common soft limit of 1,024 the documents of a large batch
    beyond it failed ("Too many open files (OUT/<doc>.claim)") before Ray had started."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = max(65536, documents + 4096)
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, ValueError, OSError):  # (no resource module on Windows; a limit we may not raise)
        pass


def _run_on_ray(ray, docs: dict, config: ArgusConfig, *, method: str, concurrency: int | None, actors: int,
                write, console: Console) -> None:
    remaining = dict(docs)
    secrets = _Secrets(credential_env(config))
    common = {"config_json": config.model_dump_json(), "method": method, "concurrency": concurrency,
              "actors": actors, "env": worker_env(), "secrets": secrets}
    per_actor = concurrency or config.concurrency.documents
    failure: tuple[str, str] | None = None
    with _data_context(ray), _ray_data_errors() as ray_errors:
        for docs_per_actor in ([per_actor, 1] if per_actor > 1 else [1]):
            if not remaining:
                break
            if docs_per_actor != per_actor:
                console.print(f"[yellow]{len(remaining)} document(s) lost their Ray worker; "
                              "trying them again one at a time per actor[/yellow]")
            results = _stream(ray, dict(remaining), docs_per_actor=docs_per_actor, **common)
            try:
                while True:
                    try:
                        result = next(results)
                    except StopIteration:
                        break
                    except Exception as exc:  # Ray itself failed: the documents without a result fail with its reason
                        failure = (type(exc).__name__, f"the Ray run failed: {type(exc).__name__}: {_clean(exc)}")
                        break
                    if remaining.pop(result.index, None) is not None:  # (a retried task's twin: ignored)
                        write(result)  # (an OSError writing OUT fails that document, as locally)
            finally:
                results.close()
            if failure is not None:
                break
        if remaining and failure is None:
            said = f"; Ray reported: {ray_errors.messages[-1]}" if ray_errors.messages else ""
            failure = ("RayWorkerError", f"no result came back from Ray: the worker running this document died "
                                         f"or its task failed on every attempt ({TASK_ATTEMPTS}){said}")
    for index, (label, doc) in sorted(remaining.items()):
        name, message = failure
        write(DocumentResult(index, label, doc.doc_id, None,
                             {"source": label, "doc_id": doc.doc_id, "error": name, "message": message}, [], 0.0))
