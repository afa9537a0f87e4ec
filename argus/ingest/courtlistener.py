"""CourtListener source: complaints of "Civil Rights: Jobs" cases (nature of suit 442) from RECAP.

Why: the pipeline needs real employment-discrimination complaints, and CourtListener's RECAP archive
holds the OCR text of federal filings that PACER users have shared. This module turns a search over
that archive into ``RawDocument`` objects (one complaint per docket) or into a folder of ``.txt``
files with ``.meta.json`` sidecars that the folder source reads like any other input.

Every request goes through the official ``courtlistener-api-client`` (package ``courtlistener``):

1. ``GET /search/?type=r&nature_of_suit=442&q=…&court=…&filed_after=…&filed_before=…`` finds dockets.
   Each hit carries the docket fields (``suitNature``, ``caseName``, ``docketNumber``, ``dateFiled``…)
   and a few nested RECAP documents; the client follows the cursor ``next`` links.
2. The complaint is picked among the nested documents (see :func:`complaint_candidates`). The
   search nests only a handful of documents per docket, so when none of them is a complaint,
   ``GET /recap-documents/?docket_entry__docket=<id>&document_number=1`` asks for document 1.
3. ``GET /recap-documents/<id>/?fields=plain_text,ocr_status,…`` returns the complaint's text.

CourtListener's ``nature_of_suit`` search parameter is a text match, so every hit is checked again
here against its ``suitNature`` and anything other than 442 is dropped. Documents without text (PDF not
in RECAP, OCR not done) are skipped with a recorded reason; failures that concern every request (bad
token, rate limit, server down) raise :class:`~argus.errors.SourceError`. The API token is read from
the environment and never logged, printed or stored.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from argus.text.documents import RawDocument
from argus.ingest.files import replace_controls
from argus.io import write_text_atomic
from argus.errors import ConfigError, SourceError

if TYPE_CHECKING:
    from courtlistener import CourtListener

log = logging.getLogger(__name__)

NATURE_OF_SUIT_CODE = "442"
NATURE_OF_SUIT_LABEL = "Civil Rights: Jobs"
TOKEN_ENV_VARS = ("COURTLISTENER_TOKEN", "COURTLISTENER_API_TOKEN")
TOKEN_HELP_URL = "https://www.courtlistener.com/profile/api/"
DEFAULT_WEB_ROOT = "https://www.courtlistener.com"
STORAGE_ROOT = "https://storage.courtlistener.com"

#: Fields asked of ``/recap-documents/``; ``plain_text`` is the OCR text that becomes the document.
DOCUMENT_FIELDS = (
    "id",
    "absolute_url",
    "plain_text",
    "ocr_status",
    "page_count",
    "is_available",
    "filepath_local",
    "document_number",
    "attachment_number",
    "description",
    "pacer_doc_id",
    "sha1",
    "date_upload",
)

OCR_STATUS = {1: "OCR Complete", 2: "OCR Not Necessary", 3: "OCR Failed", 4: "OCR Needed"}

_NOS_CODE = re.compile(r"^\s*(\d{3})\b")
_DISTRICT_DOCKET = re.compile(r"^\s*(\d+)\s*:\s*(\d{2,4})\s*-\s*([a-z]{1,4})\s*-\s*(\d+)", re.IGNORECASE)
_NOT_A_COMPLAINT = ("NOTICE OF REMOVAL",)


# --------------------------------------------------------------------------------------- records


@dataclass
class SkippedComplaint:
    """A docket whose complaint did not come out, and why (shown to the user, never fatal)."""

    doc_id: str
    case_name: str
    reason: str


@dataclass
class CourtListenerReport:
    """What one CourtListener run did; filled while iterating, read by the CLI summary.

    ``fetched`` lists the doc ids whose text came out in this run, ``already_present`` those that
    :func:`fetch_to_folder` found complete on disk (not fetched again), ``off_topic`` the dockets the
    search returned although their nature of suit is not 442, ``written`` the text files written.
    """

    dockets_seen: int = 0
    fetched: list[str] = field(default_factory=list)
    already_present: list[str] = field(default_factory=list)
    skipped: list[SkippedComplaint] = field(default_factory=list)
    off_topic: list[SkippedComplaint] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        """One line per skipped complaint, in the order they were met."""
        return [f"{s.doc_id} ({s.case_name}): {s.reason}" for s in self.skipped]

    def skip(self, doc_id: str, case_name: str, reason: str) -> None:
        self.skipped.append(SkippedComplaint(doc_id, case_name, reason))
        log.warning("CourtListener: skipped %s (%s): %s", doc_id, case_name, reason)


# ------------------------------------------------------------------------------ pure helpers


def is_employment_nos(nature_of_suit: str | None) -> bool:
    """True when a docket's nature of suit is 442 "Civil Rights: Jobs".

    PACER prints it as "442 Civil Rights: Jobs"; a few dockets carry only the label.
    """
    if not nature_of_suit:
        return False
    code = _NOS_CODE.match(nature_of_suit)
    if code:
        return code.group(1) == NATURE_OF_SUIT_CODE
    return nature_of_suit.strip().casefold() == NATURE_OF_SUIT_LABEL.casefold()


def normalize_docket_number(docket_number: str) -> str:
    """A filename-safe docket number: "1:21-cv-04417-JPO" → "1-21-cv-04417".

    District-court numbers keep office, year, case type and serial and drop judge initials, so the
    same case gets the same id however a source spells it; any other number is slugified.
    """
    m = _DISTRICT_DOCKET.match(docket_number or "")
    if m:
        office, year, kind, serial = m.groups()
        return f"{office}-{year}-{kind.lower()}-{serial}"
    return re.sub(r"[^a-z0-9]+", "-", (docket_number or "").lower()).strip("-")


def complaint_doc_id(court_id: str, docket_number: str, docket_id: int | str | None = None) -> str:
    """Document id of a docket's complaint: "<court>-<normalized docket number>" ("nysd-1-21-cv-04417")."""
    number = normalize_docket_number(docket_number)
    if not number:
        number = f"docket-{docket_id}"
    return f"{(court_id or 'unknown').lower()}-{number}"


def _as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _entry_text(doc: dict) -> str:
    """The docket text of a document: the entry description, else the document's short one."""
    return " ".join(str(doc.get("description") or doc.get("short_description") or "").split())


def complaint_candidates(documents: Iterable[dict]) -> list[tuple[dict, str | None]]:
    """The documents of one docket that may be its complaint, best first, each with a warning or None.

    Only main documents count (an attachment such as the civil cover sheet of document 1 does not).
    First come entries whose docket text starts with "COMPLAINT" ("COMPLAINT with Jury Demand
    against …"), lowest document number first; then document 1, which is the complaint in most
    civil dockets, with a warning when its docket text does not say so. A document 1 that is a
    notice of removal is not a complaint.
    """
    mains = [d for d in documents if not _as_int(d.get("attachment_number"))]
    mains.sort(key=lambda d: (_as_int(d.get("document_number")) or 10**9))
    named = [d for d in mains if _entry_text(d).upper().startswith("COMPLAINT")]
    ranked: list[tuple[dict, str | None]] = [(d, None) for d in named]
    for d in mains:
        text = _entry_text(d)
        if _as_int(d.get("document_number")) != 1 or d in named:
            continue
        if text.upper().startswith(_NOT_A_COMPLAINT):
            continue
        warning = None
        if not text:
            warning = "document 1 taken as the complaint (no docket text to confirm it)"
        elif "COMPLAINT" not in text.upper():
            warning = f"document 1 taken as the complaint; its docket text reads '{text[:80]}'"
        ranked.append((d, warning))
    return ranked


# --------------------------------------------------------------------------- client plumbing


def resolve_token(token: str | None = None) -> str:
    """The API token: the argument, else ``COURTLISTENER_TOKEN``, else ``COURTLISTENER_API_TOKEN``."""
    if token and token.strip():
        return token.strip()
    for name in TOKEN_ENV_VARS:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    raise ConfigError(
        "CourtListener needs an API token: create one at "
        f"{TOKEN_HELP_URL} and export it as COURTLISTENER_TOKEN "
        "(COURTLISTENER_API_TOKEN is read too)."
    )


def make_client(token: str | None = None, base_url: str | None = None) -> CourtListener:
    """An official CourtListener client authenticated with the resolved token.

    ``base_url`` (else ``COURTLISTENER_API_BASE_URL``, else the public v4 API) points it elsewhere,
    e.g. at a local stand-in server in tests.
    """
    api_token = resolve_token(token)
    from courtlistener import CourtListener

    return CourtListener(api_token=api_token, base_url=base_url)


def _web_root(client: Any) -> str:
    """Site root for ``absolute_url`` links, derived from the client's API base URL."""
    base = str(getattr(client, "base_url", "") or "").rstrip("/")
    root = re.sub(r"/api/rest/v\d+$", "", base)
    return root or DEFAULT_WEB_ROOT


def _detail_text(detail: Any) -> str:
    if isinstance(detail, dict):
        detail = detail.get("detail", detail)
    text = " ".join(str(detail).split())
    return text[:200] + ("…" if len(text) > 200 else "")


def _source_error(exc: BaseException, action: str, client: Any) -> SourceError:
    """A user-facing SourceError for a failed request: what failed, the status, what to do."""
    from courtlistener import CourtListenerAPIError
    from pydantic import ValidationError

    if isinstance(exc, CourtListenerAPIError):
        status = exc.status_code
        detail = _detail_text(exc.detail)
        if status == 401:
            hint = (
                "CourtListener rejected the API token; check COURTLISTENER_TOKEN "
                f"(tokens are listed at {TOKEN_HELP_URL})."
            )
        elif status == 403:
            hint = (
                "the token's account may not use this endpoint; RECAP document text needs access "
                "to the recap-documents API (ask Free Law Project if your account lacks it)."
            )
        elif status == 429:
            retry = exc.response.headers.get("Retry-After") if exc.response is not None else None
            wait = f"{retry} seconds" if retry else "a while"
            hint = (
                f"rate limit reached; wait {wait} and rerun: fetch-courtlistener resumes where it "
                "stopped and does not fetch again what it already wrote."
            )
        elif status >= 500:
            hint = "CourtListener had a server error; retry later."
        else:
            hint = "check the query options (court id, dates) and retry."
        return SourceError(f"CourtListener {action} failed with HTTP {status} ({detail}): {hint}")
    if isinstance(exc, ValidationError):
        return SourceError(
            f"CourtListener {action} returned a response the client cannot read "
            f"({exc.error_count()} validation errors); the API or the courtlistener-api-client "
            "version may have changed."
        )
    base = getattr(client, "base_url", "the CourtListener API")
    return SourceError(
        f"Could not reach CourtListener at {base} during {action} ({exc.__class__.__name__}: {exc}); "
        "check the network connection or the base URL (COURTLISTENER_API_BASE_URL)."
    )


def _request_errors() -> tuple[type[BaseException], ...]:
    import httpx
    from courtlistener import CourtListenerAPIError
    from pydantic import ValidationError

    return (CourtListenerAPIError, httpx.HTTPError, ValidationError)


def _guarded(client: Any, action: str, results: Iterable[dict]) -> Iterator[dict]:
    """Iterate a paginated client result, turning request failures into SourceError."""
    errors = _request_errors()
    it = iter(results)
    while True:
        try:
            item = next(it)
        except StopIteration:
            return
        except errors as exc:
            raise _source_error(exc, action, client) from exc
        yield item


def _get_document(client: Any, document_id: int) -> dict | None:
    """One RECAP document with its text fields, or None when it no longer exists (HTTP 404)."""
    from courtlistener import CourtListenerAPIError

    try:
        return client.recap_documents.get(document_id, fields=list(DOCUMENT_FIELDS))
    except CourtListenerAPIError as exc:
        if exc.status_code == 404:
            return None
        raise _source_error(exc, f"recap-documents/{document_id} request", client) from exc
    except _request_errors() as exc:
        raise _source_error(exc, f"recap-documents/{document_id} request", client) from exc


def _filter_error(exc: ValueError) -> ConfigError:
    """A ConfigError naming the search options the client refused."""
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors():
            msg = str(err.get("msg", "")).removeprefix("Value error, ").split(" MCP clients")[0]
            parts.append(msg.strip())
        text = "; ".join(parts)
    else:
        text = str(exc)
    return ConfigError(
        f"Invalid CourtListener search option: {text} "
        "(court ids look like 'nysd', dates like 2021-05-17)"
    )


# ------------------------------------------------------------------------------ the source


def _split_courts(court: str | None) -> list[str | None]:
    if not court:
        return [None]
    courts = [c for c in re.split(r"[\s,]+", court.strip().lower()) if c]
    return courts or [None]


def _docket_metadata(hit: dict, web_root: str) -> dict:
    docket_url = hit.get("docket_absolute_url")
    return {
        "source": "courtlistener",
        "court_id": hit.get("court_id"),
        "court": hit.get("court"),
        "docket_number": hit.get("docketNumber"),
        "case_name": hit.get("caseName") or hit.get("case_name_full"),
        "date_filed": hit.get("dateFiled"),
        "date_terminated": hit.get("dateTerminated"),
        "nature_of_suit": hit.get("suitNature"),
        "cause": hit.get("cause"),
        "jury_demand": hit.get("juryDemand"),
        "assigned_to": hit.get("assignedTo"),
        "pacer_case_id": hit.get("pacer_case_id"),
        "courtlistener_docket_id": hit.get("docket_id"),
        "courtlistener_docket_url": f"{web_root}{docket_url}" if docket_url else None,
    }


def _no_text_reason(detail: dict) -> str:
    if detail.get("is_available") is False:
        return (
            "no text: the PDF is not in the RECAP archive (it can be bought on PACER, "
            "which adds it to RECAP)"
        )
    status = OCR_STATUS.get(_as_int(detail.get("ocr_status")) or 0)
    if status == "OCR Needed":
        return "no text: the PDF is a scan that CourtListener has not OCRed yet (ocr_status 'OCR Needed')"
    if status == "OCR Failed":
        return "no text: CourtListener's OCR of the scanned PDF failed (ocr_status 'OCR Failed')"
    return "no text: CourtListener holds no plain text for this document"


def _document_warnings(detail: dict, text: str) -> list[str]:
    warnings = []
    status = OCR_STATUS.get(_as_int(detail.get("ocr_status")) or 0)
    if status == "OCR Failed":
        warnings.append("CourtListener reports that OCR failed; the text may be partial")
    pages = _as_int(detail.get("page_count"))
    if pages and len(text.strip()) < 200 * pages:
        warnings.append(
            f"only {len(text.strip())} characters for {pages} pages; the OCR text may be incomplete"
        )
    return warnings


MAX_PDF_BYTES = 200 * 1024 * 1024
"""A PDF larger than this is not downloaded (a complaint is a few MB)."""


@dataclass
class PdfRoute:
    """Where the PDF of a RECAP document without ``plain_text`` is downloaded from (``storage_url``: the
    archive's file storage, ``filepath_local`` under it) and kept (``folder``, as ``<doc_id>.pdf``); its
    text is then what the PDF route gives (``argus.ingest.pdf``: the text layer, scanned pages OCR'd)."""

    folder: Path
    storage_url: str = STORAGE_ROOT


def _download_pdf(url: str, path: Path) -> None:
    """``url`` saved at ``path`` (atomically), or ``SourceError``; it must be a PDF."""
    import tempfile
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": "argus"}), timeout=60) as resp:
            data = resp.read(MAX_PDF_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        why = f"HTTP {exc.code} {exc.reason}" if isinstance(exc, urllib.error.HTTPError) else getattr(exc, "reason", exc)
        raise SourceError(f"the PDF could not be downloaded from {url} ({why})") from exc
    if len(data) > MAX_PDF_BYTES:
        raise SourceError(f"the PDF at {url} is larger than {MAX_PDF_BYTES // 2**20} MB; not downloaded")
    if not data.startswith(b"%PDF-"):
        raise SourceError(f"{url} did not answer with a PDF")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _text_from_pdf(detail: dict, filepath: str | None, doc_id: str, pdf: PdfRoute) -> tuple[RawDocument | None, str]:
    """The PDF route's document of a RECAP document without text, or None and why not."""
    from argus.errors import ArgusError
    from argus.ingest.pdf import read_pdf_document

    if detail.get("is_available") is False or not filepath:
        return None, ""
    url = f"{pdf.storage_url.rstrip('/')}/{filepath.lstrip('/')}"
    path = pdf.folder / f"{doc_id}.pdf"
    try:
        _download_pdf(url, path)
        return read_pdf_document(path, doc_id, workers=max(1, min(4, os.cpu_count() or 1))), ""
    except (SourceError, ArgusError) as exc:
        return None, f"; its PDF was not read: {exc}"


def _fetch_complaint(
    client: Any, hit: dict, doc_id: str, report: CourtListenerReport, web_root: str, pdf: PdfRoute | None = None
) -> RawDocument | None:
    """The complaint of one docket hit as a RawDocument, or None (reason recorded in ``report``)."""
    case_name = hit.get("caseName") or "?"
    docket_id = hit.get("docket_id")
    ranked = complaint_candidates(hit.get("recap_documents") or [])
    if ranked:
        entry, warning = ranked[0]
        detail = _get_document(client, entry["id"])
        if detail is None:
            report.skip(doc_id, case_name, f"RECAP document {entry['id']} no longer exists (HTTP 404)")
            return None
    else:
        if docket_id is None:
            report.skip(doc_id, case_name, "no complaint among the search's documents and no docket id")
            return None
        listing = client.recap_documents.list(
            docket_entry={"docket": docket_id}, document_number="1", fields=list(DOCUMENT_FIELDS)
        )
        found = complaint_candidates(_guarded(client, "recap-documents request", listing))
        if not found:
            report.skip(doc_id, case_name, "no complaint entry of this docket is in the RECAP archive")
            return None
        detail, warning = found[0]
        entry = {}
    text = detail.get("plain_text") or ""
    filepath = detail.get("filepath_local") or entry.get("filepath_local")
    from_pdf = None
    if not text.strip():
        from_pdf, why_not = _text_from_pdf(detail, filepath, doc_id, pdf) if pdf is not None else (None, "")
        if from_pdf is None:
            report.skip(doc_id, case_name, _no_text_reason(detail) + why_not)
            return None
        text = from_pdf.text
    document_url = detail.get("absolute_url") or entry.get("absolute_url")
    metadata = _docket_metadata(hit, web_root)
    metadata.update(
        {
            "courtlistener_recap_document_id": detail.get("id") or entry.get("id"),
            "courtlistener_docket_entry_id": entry.get("docket_entry_id"),
            "courtlistener_document_url": f"{web_root}{document_url}" if document_url else None,
            "pdf_url": f"{STORAGE_ROOT}/{filepath}" if filepath else None,
            "document_number": _as_int(detail.get("document_number") or entry.get("document_number")),
            "entry_description": _entry_text(entry) or _entry_text(detail) or None,
            "entry_date_filed": entry.get("entry_date_filed"),
            "page_count": _as_int(detail.get("page_count") or entry.get("page_count")),
            "ocr_status": OCR_STATUS.get(_as_int(detail.get("ocr_status")) or 0),
            "pacer_doc_id": detail.get("pacer_doc_id") or entry.get("pacer_doc_id") or None,
            "sha1": detail.get("sha1"),
            "retrieved_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
    )
    text, replaced = replace_controls(text)
    warnings = ([warning] if warning else []) + _document_warnings(detail, text) + replaced
    if from_pdf is not None:
        metadata.update({"pdf_path": from_pdf.source, "pdf_sha256": from_pdf.metadata["sha256"],
                         "pages": from_pdf.metadata["pages"], "ocr_pages": from_pdf.metadata["ocr_pages"]})
        warnings = [f"no plain text in RECAP ({metadata['ocr_status'] or 'none'}): the text is the PDF route's, "
                    f"from {Path(from_pdf.source).name} kept beside it"] + [
            w for w in warnings if not w.startswith("only ")] + from_pdf.warnings
    source = metadata["courtlistener_document_url"] or metadata["courtlistener_docket_url"] or web_root
    return RawDocument(doc_id=doc_id, text=text, source=source, metadata=metadata, warnings=warnings)


def _walk(
    client: Any,
    searches: list[Any],
    *,
    limit: int,
    max_dockets: int,
    report: CourtListenerReport,
    already_have: Callable[[str], bool],
    owns_client: bool,
    pdf: PdfRoute | None = None,
) -> Iterator[tuple[str, RawDocument | None]]:
    """Yield (doc_id, RawDocument) per complaint, or (doc_id, None) for one the caller already has."""
    web_root = _web_root(client)
    produced = looked_at = 0
    seen_ids: set[str] = set()
    try:
        for search in searches:
            for hit in _guarded(client, "search request", search):
                if looked_at >= max_dockets:
                    log.info("CourtListener: stopped after %d dockets (max_dockets)", max_dockets)
                    return
                looked_at += 1
                report.dockets_seen += 1
                doc_id = complaint_doc_id(
                    str(hit.get("court_id") or ""), str(hit.get("docketNumber") or ""), hit.get("docket_id")
                )
                case_name = hit.get("caseName") or "?"
                if not is_employment_nos(hit.get("suitNature")):
                    report.off_topic.append(
                        SkippedComplaint(doc_id, case_name, f"nature of suit is {hit.get('suitNature')!r}")
                    )
                    log.info("CourtListener: %s is not NOS 442 (%r)", doc_id, hit.get("suitNature"))
                    continue
                if doc_id in seen_ids:
                    continue
                seen_ids.add(doc_id)
                if already_have(doc_id):
                    report.already_present.append(doc_id)
                    produced += 1
                    yield doc_id, None
                else:
                    raw = _fetch_complaint(client, hit, doc_id, report, web_root, pdf)
                    if raw is None:
                        continue
                    report.fetched.append(doc_id)
                    produced += 1
                    yield doc_id, raw
                if produced >= limit:
                    return
    finally:
        if owns_client:
            client.close()


def _start(
    query: str,
    *,
    court: str | None,
    filed_after: str | None,
    filed_before: str | None,
    limit: int,
    token: str | None,
    base_url: str | None,
    client: Any,
    report: CourtListenerReport | None,
    max_dockets: int | None,
    already_have: Callable[[str], bool],
    pdf: PdfRoute | None = None,
) -> Iterator[tuple[str, RawDocument | None]]:
    """Check the options and build the searches eagerly (so bad input fails at the call), then walk."""
    if limit < 1:
        raise ConfigError(f"limit must be at least 1 (got {limit})")
    owns_client = client is None
    if client is None:
        client = make_client(token, base_url)
    searches = []
    for one_court in _split_courts(court):
        filters = {
            "q": query.strip() or None,
            "nature_of_suit": NATURE_OF_SUIT_CODE,
            "court": one_court,
            "filed_after": filed_after or None,
            "filed_before": filed_before or None,
            "order_by": "dateFiled desc",
        }
        try:
            searches.append(client.recap_search.list(**{k: v for k, v in filters.items() if v is not None}))
        except ValueError as exc:  # the client validates filters with pydantic
            raise _filter_error(exc) from None
    return _walk(
        client,
        searches,
        limit=limit,
        max_dockets=max_dockets if max_dockets is not None else max(50, 10 * limit),
        report=report if report is not None else CourtListenerReport(),
        already_have=already_have,
        owns_client=owns_client,
        pdf=pdf,
    )


def iter_courtlistener_complaints(
    query: str = "",
    *,
    court: str | None = None,
    filed_after: str | None = None,
    filed_before: str | None = None,
    limit: int = 20,
    token: str | None = None,
    base_url: str | None = None,
    client: Any = None,
    report: CourtListenerReport | None = None,
    max_dockets: int | None = None,
) -> Iterator[RawDocument]:
    """Complaints of NOS 442 ("Civil Rights: Jobs") dockets from CourtListener's RECAP archive.

    ``query`` is CourtListener full-text search syntax ("" for all); ``court`` one court id or several
    separated by spaces or commas ("nysd", "laed almd"); ``filed_after`` / ``filed_before`` bound the
    docket's filing date (YYYY-MM-DD). Yields at most ``limit`` complaints, newest dockets first, one
    per docket, with their OCR text; looks at no more than ``max_dockets`` dockets (default
    ``max(50, 10 * limit)``) so that a search full of text-less dockets ends. Skipped dockets and
    their reasons go into ``report`` (and the log). ``client`` injects a ready client (then ``token``
    and ``base_url`` are not used). Options and the token are checked at the call: a missing token
    or an invalid option raises ConfigError before any request; request failures raise SourceError.
    """
    walk = _start(
        query,
        court=court,
        filed_after=filed_after,
        filed_before=filed_before,
        limit=limit,
        token=token,
        base_url=base_url,
        client=client,
        report=report,
        max_dockets=max_dockets,
        already_have=lambda _doc_id: False,
    )
    return (raw for _doc_id, raw in walk if raw is not None)


# ----------------------------------------------------------------------------- to a folder


def _write_atomic(path: Path, content: str) -> None:
    """Write ``content`` so that ``path`` is either absent/old or complete, never half written."""
    write_text_atomic(path, content, newline="")


def _pdf_route(out: Path, options: dict) -> PdfRoute | None:
    """Where PDFs come from for ``fetch_to_folder``: ``storage_url`` (or ``COURTLISTENER_STORAGE_URL``) if
    given; else CourtListener's storage when the API is CourtListener's own (no ``base_url``, no
    ``COURTLISTENER_API_BASE_URL``); else none (a stand-in or a mirror has its own)."""
    if options.get("pdfs") is False:
        return None
    custom_api = options.get("base_url") or options.get("client") or os.environ.get("COURTLISTENER_API_BASE_URL")
    storage = options.get("storage_url") or os.environ.get("COURTLISTENER_STORAGE_URL") or (
        None if custom_api else STORAGE_ROOT)
    return PdfRoute(out, storage) if storage else None


def complaint_paths(out_dir: Path, doc_id: str) -> tuple[Path, Path]:
    """The text file and the metadata sidecar of one complaint in a fetch folder."""
    return out_dir / f"{doc_id}.txt", out_dir / f"{doc_id}.meta.json"


def fetch_to_folder(
    out_dir: str | Path, *, report: CourtListenerReport | None = None, **options: Any
) -> CourtListenerReport:
    """Write each complaint as ``<out_dir>/<doc_id>.txt`` plus ``<doc_id>.meta.json``; resumable.

    ``options`` are those of :func:`iter_courtlistener_complaints` (``query``, ``court``, ``limit`` …).
    The text file holds the OCR text exactly as CourtListener returned it; a document without it whose PDF
    can be downloaded (``storage_url``; default CourtListener's storage when ``base_url`` is not given;
    ``pdfs=False``: never) is kept as ``<doc_id>.pdf`` beside the text the PDF route gives (the text layer,
    scans OCR'd, pages as form feeds; the sidecar names the PDF and its SHA-256). The sidecar holds
    ``doc_id``, ``source``, ``metadata`` and ``warnings`` (a RawDocument without its text). Both are
    written atomically, text first, so a complaint is complete once its sidecar exists. A complaint
    whose two files already exist is neither fetched nor rewritten, and counts toward ``limit``:
    rerunning an interrupted fetch (a rate limit, a lost connection) completes it. Returns the report.
    """
    known = {
        "query", "court", "filed_after", "filed_before", "limit", "token", "base_url", "client",
        "max_dockets", "pdfs", "storage_url",
    }
    unknown = sorted(set(options) - known)
    if unknown:
        raise ConfigError(f"fetch_to_folder got unknown options: {', '.join(unknown)}")
    out = Path(out_dir)
    report = report if report is not None else CourtListenerReport()

    def complete(doc_id: str) -> bool:
        return all(p.is_file() for p in complaint_paths(out, doc_id))

    walk = _start(
        options.get("query") or "",
        court=options.get("court"),
        filed_after=options.get("filed_after"),
        filed_before=options.get("filed_before"),
        limit=options.get("limit", 20),
        token=options.get("token"),
        base_url=options.get("base_url"),
        client=options.get("client"),
        report=report,
        max_dockets=options.get("max_dockets"),
        already_have=complete,
        pdf=_pdf_route(out, options),
    )
    out.mkdir(parents=True, exist_ok=True)
    for doc_id, raw in walk:
        if raw is None:
            continue
        text_path, meta_path = complaint_paths(out, doc_id)
        _write_atomic(text_path, raw.text)
        sidecar = raw.model_dump(mode="json", exclude={"text"})
        _write_atomic(meta_path, json.dumps(sidecar, indent=2, ensure_ascii=False) + "\n")
        report.written.append(text_path)
    return report


# ------------------------------------------------------------------------------------- CLI


def courtlistener_command(
    query: Annotated[
        str, typer.Argument(help="CourtListener full-text query (e.g. 'retaliation'); empty for all")
    ] = "",
    court: Annotated[
        str | None, typer.Option("--court", help="Court id(s), e.g. 'nysd' or 'nysd,laed'")
    ] = None,
    filed_after: Annotated[
        str | None, typer.Option("--filed-after", help="Dockets filed on or after YYYY-MM-DD")
    ] = None,
    filed_before: Annotated[
        str | None, typer.Option("--filed-before", help="Dockets filed on or before YYYY-MM-DD")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Complaints to have in --out")] = 20,
    out: Annotated[
        Path, typer.Option("--out", help="Folder for <doc_id>.txt and <doc_id>.meta.json (and <doc_id>.pdf)")
    ] = Path("courtlistener"),
    pdfs: Annotated[
        bool, typer.Option("--pdfs/--no-pdfs", help="Download the PDF of a document without text and keep it "
                                                    "beside the text the PDF route gives (scans need tesseract-ocr)")
    ] = True,
    storage_url: Annotated[
        str | None, typer.Option("--storage-url", help="Where RECAP's PDFs are (default: CourtListener's storage, "
                                                       "or COURTLISTENER_STORAGE_URL)")
    ] = None,
) -> None:
    """Fetch NOS 442 ("Civil Rights: Jobs") complaints from CourtListener's RECAP archive.

    Needs an API token in COURTLISTENER_TOKEN. Resumable: files already in --out are kept and
    not fetched again. A complaint without text whose PDF is in the archive is downloaded as
    <doc_id>.pdf and read by the PDF route (its text layer, or Tesseract for a scan).
    """
    from rich.console import Console

    from argus.errors import ArgusError

    console = Console()
    report = CourtListenerReport()
    error: ArgusError | None = None
    try:
        with console.status("Searching CourtListener for NOS 442 complaints…"):
            fetch_to_folder(
                out,
                report=report,
                query=query,
                court=court,
                filed_after=filed_after,
                filed_before=filed_before,
                limit=limit,
                pdfs=pdfs,
                storage_url=storage_url,
            )
    except ConfigError as exc:
        console.print(f"[red]Configuration error:[/red] {exc}")
        raise typer.Exit(code=2) from None
    except ArgusError as exc:
        error = exc

    rows = ([[doc_id, "written", ""] for doc_id in report.fetched]
            + [[doc_id, "present", "already in the folder"] for doc_id in report.already_present]
            + [[s.doc_id, "skipped", s.reason] for s in report.skipped])
    if rows:
        from argus.terminal import print_table

        print_table(console, f"CourtListener complaints in {out}", ["document", "status", "detail"], rows)
    console.print(
        f"{len(report.fetched)} written, {len(report.already_present)} already present, "
        f"{len(report.skipped)} skipped, {len(report.off_topic)} not NOS 442, "
        f"{report.dockets_seen} dockets looked at."
    )
    if error is not None:
        console.print(f"[red]Stopped:[/red] {error}")
        raise typer.Exit(code=1)
