"""``argus annotate serve FOLDER``: correct the graphs of a folder of EKGs in the browser, keep them as gold.

A small ASGI application (Starlette, served by uvicorn on 127.0.0.1) over the ``<doc_id>.ekg.json`` files that
``argus extract`` wrote into FOLDER, with any configuration. Each document's page shows the view's panels (the
text with its marks, the events, the timeline, the event graph, the entities: the templates of ``argus view``)
of its current graph, with edit controls; every edit is sent to the server at once, validated there, applied
and saved, and the page shows the result.

**Files** (all in FOLDER, each written atomically):

- ``<doc_id>.gold.json``: the corrected document in the shared SPEC format (``metrics.gold.load_gold`` reads it,
  ``metrics.gold.validate.gold_problems`` checks it; ``argus eval FOLDER`` scores against it), with an
  ``annotation`` block: the EKG it started from (file, SHA-256, method, models), ``status`` (``draft`` or
  ``accepted``), ``revision``, ``saved``, the triggers' spans and ``changes`` (what the correction changed
  against the model's graph, by kind, and how far they agree: ``argus.output.gold_edits.changes_summary``);
- ``<doc_id>.corrections.json``: the same ``changes`` and the log of the edits (``steps``, one per write, each
  its operations), which undo replays from the model's graph.

The page starts from the gold file when there is one, else from the EKG's graph (``gold_edits.gold_from_ekg``).

**API** (JSON):

- ``GET /``: the documents, each with its state (the model's graph, a draft, accepted) and its changes;
- ``GET /doc/{id}``: the page; ``GET /api/docs``: the index as JSON;
- ``GET /api/doc/{id}``: ``{doc_id, revision, status, saved, gold, problems, notes, changes, prev, next}``;
- ``POST /api/doc/{id}`` with the header ``X-Argus-Token`` and ``{"revision": n, "ops": [...]}``: the operations
  of ``gold_edits.apply_ops`` applied together (all or none), or ``{"revision": n, "ops": [{"op": "undo"}]}``
  (the last write taken back). Answers as GET (and ``created``: the new events' ids); 400 with ``error`` for an
  edit that cannot be made, 403 without the run's token, 404 for a document that is not in FOLDER, 409 with the
  current ``revision`` when the write's revision is not the document's (another tab saved first: the page
  reloads the document and says so), 413 for a body over 1 MiB.

**Safety.** The server binds 127.0.0.1 unless told otherwise; it answers only requests whose Host is a loopback
name (or the host it was bound to), so a web page elsewhere cannot reach it through DNS rebinding. Every write
needs the run's random token (in the page, sent as a header a cross-site form cannot set). A document id is one
of the EKG file names in FOLDER (anything else, ``..`` or a slash included, is a 404), no file is followed
through a symbolic link, and the server writes only ``<doc_id>.gold.json`` and ``<doc_id>.corrections.json``
there. Writes to one document are serialized and carry its revision, so two tabs on one document never lose a
write silently.
"""

from __future__ import annotations

import copy
import datetime as _dt
import hashlib
import hmac
import json
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus.errors import InputError
from argus.graph.schema import CAUSAL_RELATIONS, ENTITY_KINDS, EVENT_TYPES, LEGAL_ROLES, TEMPORAL_RELATIONS, DocumentEKG
from argus.ingest.gold import GOLD_SUFFIX
from argus.io import write_json_atomic
from argus.output.export import load_ekg
from argus.output.gold_edits import (
    SHORTCUT_TYPES,
    EditError,
    apply_ops,
    changes_summary,
    display_ekg,
    gold_from_ekg,
)
from argus.output.pages import json_script, render_page

__all__ = ["AnnotationStore", "CORRECTIONS_SUFFIX", "EKG_SUFFIX", "GOLD_SUFFIX", "LOOPBACK_HOSTS", "TOKEN_HEADER",
           "create_app", "host_name", "render_annotate_page", "serve"]

EKG_SUFFIX = ".ekg.json"
CORRECTIONS_SUFFIX = ".corrections.json"
TOKEN_HEADER = "X-Argus-Token"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
MAX_BODY_BYTES = 1 << 20
MAX_OPS = 200
TOOL = "argus annotate serve"


class Conflict(Exception):
    """A write whose revision is not the document's current one."""

    def __init__(self, current: int):
        super().__init__(f"this document is at revision {current}: it was changed elsewhere (another tab?)")
        self.current = current


class NotFound(Exception):
    pass


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _core(gold: dict) -> dict:
    """What two gold dicts must share to be the same correction: everything but the bookkeeping."""
    ann = gold.get("annotation", {})
    status = ann.get("status")
    return {**{k: v for k, v in gold.items() if k != "annotation"},
            "trigger_spans": ann.get("trigger_spans", {}), "status": "draft" if status == "model" else status}


@dataclass
class DocState:
    """One document as the server holds it."""

    doc_id: str
    ekg: DocumentEKG
    ekg_sha256: str
    model: dict  # the model's graph as gold: what the changes are counted against
    start: dict  # what undo replays the log from (the model's graph, or a saved gold the log does not explain)
    gold: dict  # the current correction
    steps: list[dict] = field(default_factory=list)
    revision: int = 0
    saved: bool = False
    notes: list[str] = field(default_factory=list)
    stamp: tuple = ()  # the gold file's (mtime_ns, size) when read or written

    def summary(self) -> dict:
        return changes_summary(self.model, self.gold, self.steps)


class AnnotationStore:
    """The documents of FOLDER: loading (gold file first, else the EKG), edits, undo and atomic saving."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder).resolve()
        if not self.folder.is_dir():
            raise InputError(f"{folder}: not a folder")
        self._docs: dict[str, DocState] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()

    # ---- ids and paths

    def doc_ids(self) -> list[str]:
        """The documents: the ``*.ekg.json`` regular files of FOLDER (not links, not hidden), by name."""
        out = []
        for p in self.folder.iterdir():
            name = p.name
            if name.endswith(EKG_SUFFIX) and not name.startswith(".") and not p.is_symlink() and p.is_file():
                out.append(name[: -len(EKG_SUFFIX)])
        return sorted(out)

    def check_id(self, doc_id: str) -> str:
        if (not doc_id or doc_id in (".", "..") or any(c in doc_id for c in "/\\\x00")
                or doc_id not in self.doc_ids()):
            raise NotFound(f"no document {doc_id!r} in {self.folder}")
        return doc_id

    def path(self, doc_id: str, suffix: str) -> Path:
        p = self.folder / f"{doc_id}{suffix}"
        if p.parent != self.folder or p.is_symlink():
            raise NotFound(f"{p.name}: not a plain file of {self.folder}")
        return p

    def _doc_lock(self, doc_id: str) -> threading.Lock:
        with self._lock:
            return self._locks.setdefault(doc_id, threading.Lock())

    # ---- loading

    def _stamp(self, doc_id: str) -> tuple:
        p = self.path(doc_id, GOLD_SUFFIX)
        try:
            st = p.stat()
        except FileNotFoundError:
            return ()
        return (st.st_mtime_ns, st.st_size)

    def _load(self, doc_id: str) -> DocState:
        ekg_path = self.path(doc_id, EKG_SUFFIX)
        raw = ekg_path.read_bytes()
        sha = hashlib.sha256(raw).hexdigest()
        try:
            ekg = load_ekg(ekg_path)
        except Exception as exc:  # noqa: BLE001 - the page says why this one document cannot be opened
            raise EditError(f"{ekg_path.name} is not a readable EKG: {type(exc).__name__}: {str(exc)[:300]}") from None
        if not ekg.text:
            raise EditError(f"{ekg_path.name} carries no text (a schema 1.0 file whose source is not at hand): "
                            "extract the document again")
        model = gold_from_ekg(ekg)
        model["doc_id"] = doc_id  # the file's name: what the gold file is named by and found under
        model["annotation"].update({"tool": TOOL, "ekg": ekg_path.name, "ekg_sha256": sha, "method": ekg.method,
                                    "models": dict(ekg.models), "source": ekg.source})
        state = DocState(doc_id=doc_id, ekg=ekg, ekg_sha256=sha, model=model, start=model,
                         gold=copy.deepcopy(model), stamp=self._stamp(doc_id))
        gold_path = self.path(doc_id, GOLD_SUFFIX)
        if not gold_path.exists():
            return state
        try:
            saved = json.loads(gold_path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise EditError(f"{gold_path.name} is not JSON ({exc}): mend it or move it away") from None
        if not isinstance(saved, dict) or not isinstance(saved.get("graph"), dict) or "sections" not in saved:
            raise EditError(f"{gold_path.name} is not a gold file (a JSON object with sections and a graph)")
        saved.setdefault("annotation", {}).setdefault("trigger_spans", {})
        state.saved = True
        state.revision = int(saved["annotation"].get("revision", 0) or 0)
        corr_path = self.path(doc_id, CORRECTIONS_SUFFIX)
        steps: list[dict] = []
        if corr_path.exists():
            try:
                corr = json.loads(corr_path.read_text(encoding="utf-8"))
            except ValueError:
                corr = None
            if isinstance(corr, dict) and corr.get("ekg_sha256") == sha and isinstance(corr.get("steps"), list):
                steps = corr["steps"]
        try:
            replayed = self._replay(model, steps, ekg.text)
        except EditError:
            replayed = None
        if replayed is not None and _core(replayed) == _core(saved):
            state.steps = steps
        else:
            state.start = saved
            state.notes.append(f"{gold_path.name} is not this EKG's graph with the logged edits (edited by hand, "
                               "or the EKG was extracted again): the page starts from it, and undo goes back no "
                               "further than it")
        state.gold = saved
        return state

    @staticmethod
    def _replay(start: dict, steps: list[dict], text: str) -> dict:
        gold = start
        reserved = [e["id"] for e in start["graph"]["events"]]
        for step in steps:
            gold, _ = apply_ops(gold, step.get("ops", []), text, reserved=reserved)
        return gold

    def state(self, doc_id: str) -> DocState:
        """The document's current state (read again when its gold file changed on disk)."""
        self.check_id(doc_id)
        with self._doc_lock(doc_id):
            return self._current(doc_id)

    def _current(self, doc_id: str) -> DocState:
        st = self._docs.get(doc_id)
        if st is None or st.stamp != self._stamp(doc_id):
            st = self._docs[doc_id] = self._load(doc_id)
        return st

    # ---- writing

    def apply(self, doc_id: str, revision: Any, ops: Any) -> tuple[DocState, list[str]]:
        """Apply one write (see the module docstring) and save; returns the new state and the created ids."""
        self.check_id(doc_id)
        if type(revision) is not int:
            raise EditError("'revision' should be the document's revision number (an integer)")
        if not isinstance(ops, list) or not ops:
            raise EditError("'ops' should be a non-empty list of operations")
        if len(ops) > MAX_OPS:
            raise EditError(f"{len(ops)} operations in one write (at most {MAX_OPS})")
        with self._doc_lock(doc_id):
            st = self._current(doc_id)
            if revision != st.revision:
                raise Conflict(st.revision)
            text = st.ekg.text
            reserved = [e["id"] for e in st.model["graph"]["events"]]
            if any(isinstance(op, dict) and op.get("op") == "undo" for op in ops):
                if len(ops) != 1 or set(ops[0]) != {"op"}:
                    raise EditError("undo: send it alone, as {\"op\": \"undo\"}")
                if not st.steps:
                    raise EditError("undo: nothing to undo" + (" since the saved gold the page started from"
                                                              if st.start is not st.model else ""))
                steps = st.steps[:-1]
                gold, created = self._replay(st.start, steps, text), []
            else:
                gold, created = apply_ops(st.gold, ops, text, reserved=reserved)
                steps = [*st.steps, {"ops": ops, "at": _now()}]
                before = set(self._problems(st.gold, text))
                new = [p for p in self._problems(gold, text) if p not in before]
                if new:
                    raise EditError("the result would not be valid gold: " + "; ".join(new[:5]))
            before_write = (st.gold, st.steps, st.revision, st.saved)
            st.gold, st.steps, st.revision = gold, steps, st.revision + 1
            try:
                self._save(st)
            except BaseException:
                st.gold, st.steps, st.revision, st.saved = before_write
                raise
            return st, created

    @staticmethod
    def _problems(gold: dict, text: str) -> list[str]:
        from metrics.gold.validate import gold_problems

        return gold_problems(gold, text)  # it reads the SPEC's keys only, not the page's ``annotation``

    def _save(self, st: DocState) -> None:
        summary = st.summary()
        at = _now()
        ann = st.gold.setdefault("annotation", {})
        if ann.get("status") in (None, "model"):
            ann["status"] = "draft"
        for key in ("tool", "ekg", "ekg_sha256", "method", "models", "source"):
            ann[key] = st.model["annotation"].get(key)
        ann.update({"revision": st.revision, "saved": at, "changes": summary["changes"],
                    "agreement": summary["agreement"]})
        write_json_atomic(self.path(st.doc_id, CORRECTIONS_SUFFIX), {
            "doc_id": st.doc_id, "ekg": ann["ekg"], "ekg_sha256": st.ekg_sha256, "revision": st.revision,
            "saved": at, "status": ann["status"], **summary, "steps": st.steps})
        write_json_atomic(self.path(st.doc_id, GOLD_SUFFIX), st.gold)
        st.saved = True
        st.stamp = self._stamp(st.doc_id)

    # ---- what the pages and the API show

    def document_json(self, st: DocState) -> dict:
        ids = self.doc_ids()
        i = ids.index(st.doc_id) if st.doc_id in ids else -1
        return {
            "doc_id": st.doc_id, "revision": st.revision,
            "status": st.gold.get("annotation", {}).get("status", "model"),
            "saved": st.saved, "gold": st.gold, "problems": self._problems(st.gold, st.ekg.text), "notes": st.notes,
            "changes": st.summary(), "undo": len(st.steps),
            "prev": ids[i - 1] if i > 0 else None, "next": ids[i + 1] if 0 <= i < len(ids) - 1 else None,
        }

    def index(self) -> list[dict]:
        rows = []
        for doc_id in self.doc_ids():
            try:
                st = self.state(doc_id)
            except Exception as exc:  # noqa: BLE001 - one bad file is listed with its error, the others go on
                rows.append({"doc_id": doc_id, "error": f"{type(exc).__name__}: {exc}"})
                continue
            summary = st.summary()
            rows.append({"doc_id": doc_id, "status": st.gold.get("annotation", {}).get("status", "model"),
                         "saved": st.saved, "revision": st.revision, "method": st.ekg.method,
                         "events": summary["corrected"]["events"], "model_events": summary["model"]["events"],
                         "changes": summary["total"], "error": None})
        return rows


# ----------------------------------------------------------------------------- pages


def render_annotate_page(store: AnnotationStore, st: DocState, token: str) -> str:
    """The editing page of one document: the view's panels of its current graph, the edit controls, the data."""
    from argus.output.view import view_context

    doc = store.document_json(st)
    shown = display_ekg(st.ekg, st.gold)
    ctx = view_context(shown)
    config = {
        "doc_id": st.doc_id, "api": f"/api/doc/{st.doc_id}", "page": f"/doc/{st.doc_id}", "token": token,
        "token_header": TOKEN_HEADER, "revision": st.revision, "status": doc["status"], "saved": st.saved,
        "undo": doc["undo"], "prev": doc["prev"], "next": doc["next"], "types": list(EVENT_TYPES),
        "shortcut_types": list(SHORTCUT_TYPES), "roles": list(LEGAL_ROLES), "kinds": list(ENTITY_KINDS),
        "relations": {"temporal": list(TEMPORAL_RELATIONS), "causal": list(CAUSAL_RELATIONS)},
        "facts": [s.id for s in shown.sentences if s.section == "facts"],
    }
    return render_page(
        "annotate.html.j2", connect_src=("'self'",), **ctx, doc=doc, shortcut_types=SHORTCUT_TYPES,
        annotate_script=json_script(config, "annotate-data"))


def render_annotate_index(store: AnnotationStore) -> str:
    return render_page("annotate_index.html.j2", rows=store.index(), folder=store.folder)


# ----------------------------------------------------------------------------- the application


def host_name(header: str) -> str:
    """The host of a Host header, without its port: ``127.0.0.1:8765`` → ``127.0.0.1``, ``[::1]:80`` → ``::1``."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else ""
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


class _HostCheck:
    """An ASGI middleware answering 400 to an HTTP request whose Host is not one of ``allowed_hosts`` (``*``: any)."""

    def __init__(self, app, allowed_hosts: tuple[str, ...]):
        self.app = app
        self.any = "*" in allowed_hosts
        self.allowed = {h.strip("[]").lower() for h in allowed_hosts}

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and not self.any:
            host = next((v.decode("latin-1") for k, v in scope["headers"] if k == b"host"), "")
            if host_name(host) not in self.allowed:
                from starlette.responses import PlainTextResponse

                await PlainTextResponse("Invalid host header", status_code=400)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def create_app(folder: str | Path, *, token: str | None = None, allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS):
    """The ASGI application over ``folder`` (see the module docstring); ``token``: the run's write token (a new
    random one by default, in ``app.state.token``); ``allowed_hosts``: the Host names it answers."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, Response
    from starlette.routing import Route

    store = AnnotationStore(folder)
    token = token or secrets.token_urlsafe(32)
    headers = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
               "X-Frame-Options": "DENY"}

    def error(status: int, message: str, **extra: Any) -> JSONResponse:
        return JSONResponse({"error": message, **extra}, status_code=status, headers=headers)

    def html(text: str) -> HTMLResponse:
        return HTMLResponse(text, headers=headers)

    def index(request: Request) -> Response:
        return html(render_annotate_index(store))

    def page(request: Request) -> Response:
        try:
            st = store.state(request.path_params["doc_id"])
        except NotFound as exc:
            return error(404, str(exc))
        except EditError as exc:
            return error(422, str(exc))
        return html(render_annotate_page(store, st, token))

    def api_docs(request: Request) -> Response:
        return JSONResponse({"folder": str(store.folder), "documents": store.index()}, headers=headers)

    async def api_doc(request: Request) -> Response:
        doc_id = request.path_params["doc_id"]
        if request.method == "GET":
            try:
                st = store.state(doc_id)
            except NotFound as exc:
                return error(404, str(exc))
            except EditError as exc:
                return error(422, str(exc))
            return JSONResponse(store.document_json(st), headers=headers)
        given = request.headers.get(TOKEN_HEADER, "")
        if not given or not hmac.compare_digest(given.encode(), token.encode()):
            return error(403, f"a write needs this run's token in the {TOKEN_HEADER} header (reload the page)")
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return error(415, "send the edit as application/json")
        declared = request.headers.get("content-length", "0")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return error(413, f"a write of {declared} bytes (at most {MAX_BODY_BYTES})")
        body = await request.body()
        if len(body) > MAX_BODY_BYTES:
            return error(413, f"a write of {len(body)} bytes (at most {MAX_BODY_BYTES})")
        try:
            data = json.loads(body)
        except ValueError as exc:
            return error(400, f"not JSON: {exc}")
        if not isinstance(data, dict) or set(data) - {"revision", "ops"}:
            return error(400, "send {\"revision\": n, \"ops\": [...]}")
        from starlette.concurrency import run_in_threadpool

        try:
            st, created = await run_in_threadpool(store.apply, doc_id, data.get("revision"), data.get("ops"))
        except NotFound as exc:
            return error(404, str(exc))
        except Conflict as exc:
            return error(409, str(exc), revision=exc.current)
        except EditError as exc:
            return error(400, str(exc))
        except OSError as exc:  # a full disk, a folder made read-only: nothing was changed
            return error(500, f"could not save: {exc}")
        return JSONResponse({**store.document_json(st), "created": created}, headers=headers)

    app = Starlette(
        routes=[Route("/", index), Route("/doc/{doc_id}", page), Route("/api/docs", api_docs),
                Route("/api/doc/{doc_id}", api_doc, methods=["GET", "POST"])],
        middleware=[Middleware(_HostCheck, allowed_hosts=allowed_hosts)],
    )
    app.state.token = token
    app.state.store = store
    return app


def serve(folder: str | Path, *, host: str = "127.0.0.1", port: int = 8765, echo=print) -> None:
    """Serve ``folder`` until interrupted (``argus annotate serve``)."""
    import socket

    import uvicorn

    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: not a folder")
    store = AnnotationStore(folder)
    if not store.doc_ids():
        raise InputError(f"no *{EKG_SUFFIX} files in {folder} (argus extract writes them)")
    if port == 0:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            s.bind((host, 0))
            port = s.getsockname()[1]
    loopback = host in LOOPBACK_HOSTS
    hosts = LOOPBACK_HOSTS if loopback else ("*",) if host in ("0.0.0.0", "::", "") else (*LOOPBACK_HOSTS, host)
    app = create_app(folder, allowed_hosts=hosts)
    shown = f"[{host}]" if ":" in host else host
    if not loopback:
        echo(f"warning: serving on {host}, not only this machine: anyone who can reach it can read the documents "
             "(writes still need the page's token)")
    echo(f"argus annotate: http://{shown}:{port}/ ({len(store.doc_ids())} documents in {folder}; Ctrl-C stops)")
    uvicorn.run(app, host=host, port=port, log_level="warning")
