"""The CourtListener source against a local stand-in of the v4 REST API.

The official ``courtlistener-api-client`` talks HTTP to a ``http.server`` on 127.0.0.1 that serves the
recorded-style responses in ``tests/fixtures/courtlistener`` (see its README), checks the token like
the real API, follows the client's cursor links and can be told to fail a route (401, 429 …).
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit, urlunsplit

import pytest

from argus.text.documents import RawDocument
from argus.errors import ConfigError, SourceError
from argus.ingest import courtlistener as cl

FIXTURES = Path(__file__).parent / "fixtures" / "courtlistener"
TOKEN = "cl-test-token-7f3b9c21"
PAGE2_CURSOR = "cz0yMDEwLTEwLTIzJnA9NTAxOTM2NA=="

# What the fixtures hold: three NOS 442 complaints with text, newest docket first.
EXPECTED_IDS = ["ohsd-1-10-cv-00744", "almd-1-08-cv-00901", "laed-2-08-cv-04256"]
NO_TEXT_ID = "mad-3-17-cv-12090"  # complaint awaiting OCR
OFF_TOPIC_ID = "nysd-1-20-cv-10821"  # NOS 445


@dataclass
class Recorded:
    path: str
    params: dict[str, list[str]]
    authorization: str | None


class StandIn:
    """A local stand-in for https://www.courtlistener.com/api/rest/v4 serving the fixtures."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.failures: dict[str, tuple[int, dict, dict[str, str]]] = {}
        self.pages: dict[str, dict] = {}  # search route -> replacement page
        self.files: dict[str, bytes] = {}  # file storage: path under /storage/ -> bytes (RECAP's PDFs)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base_url = f"http://127.0.0.1:{self._server.server_port}/api/rest/v4"
        self.storage_url = f"http://127.0.0.1:{self._server.server_port}/storage"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fail(self, route: str, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        """Answer ``route`` ("search_page1", "search_page2", "document", "documents") with an error."""
        self.failures[route] = (status, body, headers or {})

    def requests_to(self, prefix: str) -> list[Recorded]:
        return [r for r in self.requests if r.path.startswith(prefix)]

    # -- request handling

    def _handler(self):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server API)
                parts = urlsplit(self.path)
                params = parse_qs(parts.query)
                standin.requests.append(Recorded(parts.path, params, self.headers.get("Authorization")))
                if parts.path.startswith("/storage/"):  # public file storage: no token
                    data = standin.files.get(parts.path[len("/storage/"):])
                    self.send_response(200 if data is not None else 404)
                    self.send_header("Content-Type", "application/pdf")
                    self.send_header("Content-Length", str(len(data or b"")))
                    self.end_headers()
                    self.wfile.write(data or b"")
                    return
                status, body, headers = standin._respond(parts.path, params, self.headers)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        return Handler

    def _respond(self, path: str, params: dict[str, list[str]], headers) -> tuple[int, dict, dict]:
        if headers.get("Authorization") != f"Token {TOKEN}":
            return 401, {"detail": "Invalid token."}, {"WWW-Authenticate": "Token"}
        if path == "/api/rest/v4/search/":
            return self._search(params)
        m = re.fullmatch(r"/api/rest/v4/recap-documents/(\d+)/", path)
        if m:
            if "document" in self.failures:
                return self.failures["document"]
            fixture = FIXTURES / f"recap_document_{m.group(1)}.json"
            if not fixture.exists():
                return 404, {"detail": "No RECAPDocument matches the given query."}, {}
            return 200, _only_fields(json.loads(fixture.read_text()), params), {}
        if path == "/api/rest/v4/recap-documents/":
            if "documents" in self.failures:
                return self.failures["documents"]
            docket = params.get("docket_entry__docket", ["?"])[0]
            number = params.get("document_number", ["?"])[0]
            fixture = FIXTURES / f"recap_documents_docket_{docket}_document_{number}.json"
            page = json.loads(fixture.read_text()) if fixture.exists() else {
                "count": 0, "next": None, "previous": None, "results": []
            }
            page["results"] = [_only_fields(r, params) for r in page["results"]]
            return 200, page, {}
        return 404, {"detail": "Not found."}, {}

    def _search(self, params: dict[str, list[str]]) -> tuple[int, dict, dict]:
        if params.get("type") != ["r"] or params.get("nature_of_suit") != ["442"]:
            return 400, {"detail": "stand-in serves only type=r&nature_of_suit=442"}, {}
        route = "search_page2" if params.get("cursor") == [PAGE2_CURSOR] else "search_page1"
        if route in self.failures:
            return self.failures[route]
        page = self.pages.get(route) or json.loads(
            (FIXTURES / f"{route.replace('search_', 'search_recap_')}.json").read_text()
        )
        page = json.loads(json.dumps(page))
        courts = " ".join(params.get("court", [])).split()
        if courts:
            page["results"] = [r for r in page["results"] if r["court_id"] in courts]
        if page["next"]:  # like the real API, the cursor link carries the query's filters
            link = urlsplit(page["next"])
            query = {k: v for k, v in params.items() if k != "cursor"}
            query["cursor"] = parse_qs(link.query)["cursor"]
            page["next"] = urlunsplit(link._replace(query=urlencode(query, doseq=True)))
        return 200, page, {}


def _only_fields(record: dict, params: dict[str, list[str]]) -> dict:
    """Trim a record to ``?fields=a,b`` like the API's dynamic fields."""
    wanted = ",".join(params.get("fields", [])).split(",")
    wanted = [w for w in wanted if w]
    return {k: v for k, v in record.items() if k in wanted} if wanted else record


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in (*cl.TOKEN_ENV_VARS, "COURTLISTENER_API_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def standin():
    server = StandIn()
    yield server
    server.close()


@pytest.fixture
def token_env(monkeypatch):
    monkeypatch.setenv("COURTLISTENER_TOKEN", TOKEN)


def _fetch(standin: StandIn, **options) -> list[RawDocument]:
    return list(cl.iter_courtlistener_complaints(base_url=standin.base_url, **options))


# ------------------------------------------------------------------------------------ search


def test_only_nos_442_complaints_come_out_across_both_pages(standin, token_env):
    report = cl.CourtListenerReport()
    docs = _fetch(standin, report=report)

    assert [d.doc_id for d in docs] == EXPECTED_IDS
    assert all(d.metadata["nature_of_suit"] == "442 Civil Rights: Jobs" for d in docs)
    assert [s.doc_id for s in report.off_topic] == [OFF_TOPIC_ID]
    assert report.dockets_seen == 5
    searches = standin.requests_to("/api/rest/v4/search/")
    assert len(searches) == 2, "the cursor link of page 1 was not followed"
    assert searches[1].params["cursor"] == [PAGE2_CURSOR]
    for request in searches:
        assert request.params["type"] == ["r"]
        assert request.params["nature_of_suit"] == ["442"]


def test_authorization_header_carries_the_token_from_the_environment(standin, token_env):
    _fetch(standin)
    assert standin.requests
    assert {r.authorization for r in standin.requests} == {f"Token {TOKEN}"}


def test_courtlistener_api_token_is_read_too_and_courtlistener_token_wins(standin, monkeypatch):
    monkeypatch.setenv("COURTLISTENER_API_TOKEN", TOKEN)
    assert [d.doc_id for d in _fetch(standin)] == EXPECTED_IDS

    monkeypatch.setenv("COURTLISTENER_TOKEN", TOKEN)
    monkeypatch.setenv("COURTLISTENER_API_TOKEN", "some-other-token")
    assert [d.doc_id for d in _fetch(standin)] == EXPECTED_IDS


def test_query_court_and_dates_reach_the_search(standin, token_env):
    docs = _fetch(standin, query="retaliation", court="laed", filed_after="2008-01-01",
                  filed_before="2009-12-31")
    assert [d.doc_id for d in docs] == ["laed-2-08-cv-04256"]
    first = standin.requests_to("/api/rest/v4/search/")[0].params
    assert first["q"] == ["retaliation"]
    assert first["court"] == ["laed"]
    assert first["filed_after"] == ["2008-01-01"]
    assert first["filed_before"] == ["2009-12-31"]


def test_several_courts_run_one_search_each(standin, token_env):
    docs = _fetch(standin, court="laed, ohsd")
    assert sorted(d.doc_id for d in docs) == ["laed-2-08-cv-04256", "ohsd-1-10-cv-00744"]
    first_pages = [r for r in standin.requests_to("/api/rest/v4/search/") if "cursor" not in r.params]
    assert [r.params["court"] for r in first_pages] == [["laed"], ["ohsd"]]


def test_limit_stops_before_the_next_page(standin, token_env):
    docs = _fetch(standin, limit=1)
    assert [d.doc_id for d in docs] == EXPECTED_IDS[:1]
    assert len(standin.requests_to("/api/rest/v4/search/")) == 1


def test_max_dockets_bounds_a_search_that_yields_nothing(standin, token_env):
    report = cl.CourtListenerReport()
    docs = _fetch(standin, report=report, max_dockets=2)  # the off-topic and the text-less docket
    assert docs == []
    assert report.dockets_seen == 2
    assert len(standin.requests_to("/api/rest/v4/search/")) == 1


# --------------------------------------------------------------------------- the complaint


def test_complaint_text_and_metadata(standin, token_env):
    docs = {d.doc_id: d for d in _fetch(standin)}
    dediol = docs["laed-2-08-cv-04256"]
    recorded = json.loads((FIXTURES / "recap_document_20311457.json").read_text())

    assert dediol.text == recorded["plain_text"]
    meta = dediol.metadata
    root = standin.base_url.removesuffix("/api/rest/v4")
    assert meta["case_name"] == "Dediol v. Best Chevrolet"
    assert meta["court_id"] == "laed"
    assert meta["docket_number"] == "2:08-cv-04256"
    assert meta["date_filed"] == "2008-08-22"
    assert meta["page_count"] == 2
    assert meta["document_number"] == 1
    assert meta["courtlistener_docket_id"] == 4512901
    assert meta["courtlistener_recap_document_id"] == 20311457
    assert meta["courtlistener_docket_url"] == f"{root}/docket/4512901/dediol-v-best-chevrolet/"
    assert dediol.source == f"{root}/docket/4512901/1/dediol-v-best-chevrolet/"
    assert meta["entry_description"].startswith("COMPLAINT with Jury Demand against Best Chevrolet")
    assert dediol.warnings == []
    # The complaint's text was asked for explicitly, not the cover-sheet attachment of entry 1.
    fetched = standin.requests_to("/api/rest/v4/recap-documents/20311457/")
    assert len(fetched) == 1 and "plain_text" in fetched[0].params["fields"][0].split(",")
    assert not standin.requests_to("/api/rest/v4/recap-documents/20311458/")


def test_complaint_entry_is_preferred_over_other_nested_documents(standin, token_env):
    docs = {d.doc_id: d for d in _fetch(standin)}
    griffin = docs["ohsd-1-10-cv-00744"]
    # Nested first is the report and recommendation "re 1 Complaint"; it must not be taken.
    assert griffin.metadata["courtlistener_recap_document_id"] == 40988001
    assert griffin.text.startswith("Case: 1:10-cv-00744-SSB-SKB Doc #: 1")


def test_document_1_is_asked_for_when_the_search_did_not_nest_the_complaint(standin, token_env):
    docs = {d.doc_id: d for d in _fetch(standin)}
    efurd = docs["almd-1-08-cv-00901"]
    listing = standin.requests_to("/api/rest/v4/recap-documents/")
    listing = [r for r in listing if r.path == "/api/rest/v4/recap-documents/"]
    assert len(listing) == 1
    assert listing[0].params["docket_entry__docket"] == ["4872113"]
    assert listing[0].params["document_number"] == ["1"]
    assert efurd.metadata["courtlistener_recap_document_id"] == 30877101  # not the fee receipt
    assert "Family and Medical Leave Act" in efurd.text
    assert efurd.warnings == ["document 1 taken as the complaint (no docket text to confirm it)"]


def test_document_without_text_is_skipped_with_a_warning_and_the_run_goes_on(standin, token_env, caplog):
    report = cl.CourtListenerReport()
    with caplog.at_level(logging.WARNING, logger="argus.ingest.courtlistener"):
        docs = _fetch(standin, report=report)
    assert NO_TEXT_ID not in [d.doc_id for d in docs]
    assert len(docs) == 3  # dockets after the skipped one still came out
    assert [s.doc_id for s in report.skipped] == [NO_TEXT_ID]
    assert "OCR Needed" in report.skipped[0].reason
    assert report.warnings == [f"{NO_TEXT_ID} (O'Donnell v. Trustees of Deerfield Academy): "
                               f"{report.skipped[0].reason}"]
    assert NO_TEXT_ID in caplog.text


def test_a_document_gone_from_the_archive_is_skipped(standin, token_env):
    page1 = json.loads((FIXTURES / "search_recap_page1.json").read_text())
    griffin = page1["results"][2]
    assert griffin["caseName"] == "Griffin v. Sun Chemical Corporation"
    griffin["recap_documents"][1]["id"] = 99999999  # no such fixture: the stand-in answers 404
    standin.pages["search_page1"] = page1
    report = cl.CourtListenerReport()

    docs = _fetch(standin, report=report)

    assert [d.doc_id for d in docs] == EXPECTED_IDS[1:]
    assert [(s.doc_id, "HTTP 404" in s.reason) for s in report.skipped] == [
        (NO_TEXT_ID, False), ("ohsd-1-10-cv-00744", True)
    ]


def test_an_injected_client_is_used_as_is_and_left_open(standin):
    from courtlistener import CourtListener

    client = CourtListener(api_token=TOKEN, base_url=standin.base_url)
    docs = list(cl.iter_courtlistener_complaints(client=client, limit=1))
    assert [d.doc_id for d in docs] == EXPECTED_IDS[:1]
    assert client._http_client is not None, "the caller's client was closed"
    client.close()


def test_token_never_reaches_metadata_or_logs(standin, token_env, caplog, tmp_path):
    with caplog.at_level(logging.DEBUG):
        docs = _fetch(standin)
        cl.fetch_to_folder(tmp_path, base_url=standin.base_url)
    for doc in docs:
        assert TOKEN not in json.dumps(doc.model_dump())
    assert TOKEN not in caplog.text
    for path in tmp_path.iterdir():
        assert TOKEN not in path.read_text()


# -------------------------------------------------------------------------------- failures


def test_missing_token_raises_config_error_before_any_request(standin):
    with pytest.raises(ConfigError, match="COURTLISTENER_TOKEN"):
        cl.iter_courtlistener_complaints(base_url=standin.base_url)
    assert standin.requests == []


def test_rejected_token_raises_source_error_with_the_status(standin, monkeypatch):
    monkeypatch.setenv("COURTLISTENER_TOKEN", "expired-token-123")
    with pytest.raises(SourceError) as err:
        _fetch(standin)
    message = str(err.value)
    assert "HTTP 401" in message and "Invalid token." in message
    assert "COURTLISTENER_TOKEN" in message
    assert "expired-token-123" not in message


def test_rate_limit_raises_source_error_that_says_when_to_retry(standin, token_env):
    standin.fail("search_page1", 429,
                 {"detail": "Request was throttled. Expected available in 37 seconds."},
                 {"Retry-After": "37"})
    with pytest.raises(SourceError) as err:
        _fetch(standin)
    message = str(err.value)
    assert "HTTP 429" in message
    assert "wait 37 seconds" in message and "resumes" in message


def test_forbidden_document_endpoint_raises_source_error(standin, token_env):
    standin.fail("document", 403, {"detail": "You do not have permission to perform this action."})
    with pytest.raises(SourceError, match="HTTP 403.*recap-documents"):
        _fetch(standin)


def test_unreachable_server_raises_source_error(token_env):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(SourceError, match="Could not reach CourtListener"):
        list(cl.iter_courtlistener_complaints(base_url=f"http://127.0.0.1:{port}/api/rest/v4"))


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"court": "nowhere"}, "court"),
        ({"filed_after": "last tuesday"}, "filed_after"),
        ({"limit": 0}, "limit"),
    ],
)
def test_invalid_options_raise_config_error(standin, token_env, options, needle):
    with pytest.raises(ConfigError, match=needle):
        cl.iter_courtlistener_complaints(base_url=standin.base_url, **options)
    assert standin.requests == []


# ---------------------------------------------------------------------------- to a folder


def test_fetch_to_folder_writes_text_and_metadata(standin, token_env, tmp_path):
    out = tmp_path / "complaints"
    report = cl.fetch_to_folder(out, base_url=standin.base_url)

    assert sorted(p.name for p in out.iterdir()) == sorted(
        name for doc_id in EXPECTED_IDS for name in (f"{doc_id}.txt", f"{doc_id}.meta.json")
    )
    assert report.written == [out / f"{doc_id}.txt" for doc_id in EXPECTED_IDS]
    recorded = json.loads((FIXTURES / "recap_document_20311457.json").read_text())
    text_path, meta_path = cl.complaint_paths(out, "laed-2-08-cv-04256")
    assert text_path.read_bytes() == recorded["plain_text"].encode("utf-8")
    sidecar = json.loads(meta_path.read_text())
    restored = RawDocument(text=text_path.read_text(encoding="utf-8"), **sidecar)
    assert restored.doc_id == "laed-2-08-cv-04256"
    assert restored.metadata["case_name"] == "Dediol v. Best Chevrolet"


def test_fetch_to_folder_is_resumable_and_keeps_existing_files(standin, token_env, tmp_path):
    cl.fetch_to_folder(tmp_path, base_url=standin.base_url)
    kept = tmp_path / "laed-2-08-cv-04256.txt"
    kept.write_text("edited by hand", encoding="utf-8")
    standin.requests.clear()

    report = cl.fetch_to_folder(tmp_path, base_url=standin.base_url)

    assert report.written == []
    assert report.already_present == EXPECTED_IDS
    assert kept.read_text(encoding="utf-8") == "edited by hand"
    asked = {r.path for r in standin.requests_to("/api/rest/v4/recap-documents/")}
    # Only the complaint that had no text is looked at again (it may have been OCRed since).
    assert asked == {"/api/rest/v4/recap-documents/36510442/"}, "complete complaints were fetched again"


def test_interrupted_fetch_keeps_complete_files_and_a_rerun_finishes(standin, token_env, tmp_path):
    standin.fail("search_page2", 429, {"detail": "Request was throttled."}, {"Retry-After": "5"})
    report = cl.CourtListenerReport()
    with pytest.raises(SourceError, match="HTTP 429"):
        cl.fetch_to_folder(tmp_path, base_url=standin.base_url, report=report)
    assert report.fetched == EXPECTED_IDS[:1]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ohsd-1-10-cv-00744.meta.json", "ohsd-1-10-cv-00744.txt"
    ]

    standin.failures.clear()
    standin.requests.clear()
    report = cl.fetch_to_folder(tmp_path, base_url=standin.base_url)
    assert report.already_present == EXPECTED_IDS[:1]
    assert report.fetched == EXPECTED_IDS[1:]
    assert not standin.requests_to("/api/rest/v4/recap-documents/40988001/")
    assert len(list(tmp_path.glob("*.txt"))) == 3


def test_limit_counts_complaints_already_in_the_folder(standin, token_env, tmp_path):
    cl.fetch_to_folder(tmp_path, base_url=standin.base_url, limit=1)
    report = cl.fetch_to_folder(tmp_path, base_url=standin.base_url, limit=2)
    assert report.already_present == EXPECTED_IDS[:1]
    assert report.fetched == EXPECTED_IDS[1:2]
    assert len(list(tmp_path.glob("*.txt"))) == 2


def test_a_write_that_fails_leaves_no_partial_file(standin, token_env, tmp_path, monkeypatch):
    real_replace = os.replace
    calls = []

    def failing_replace(src, dst):
        calls.append(dst)
        if str(dst).endswith(".meta.json"):
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(cl.os, "replace", failing_replace)
    with pytest.raises(OSError, match="disk full"):
        cl.fetch_to_folder(tmp_path, base_url=standin.base_url)
    # The text went in whole; the sidecar never appeared, and no temp file was left behind.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ohsd-1-10-cv-00744.txt"]

    monkeypatch.setattr(cl.os, "replace", real_replace)
    report = cl.fetch_to_folder(tmp_path, base_url=standin.base_url)
    assert report.fetched == EXPECTED_IDS, "a complaint without its sidecar must count as missing"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_unknown_fetch_option_is_a_config_error(tmp_path, token_env):
    with pytest.raises(ConfigError, match="limt"):
        cl.fetch_to_folder(tmp_path, limt=3)


# ------------------------------------------------------------------------------ pure parts


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        ("1:21-cv-04417", "1-21-cv-04417"),
        ("1:21-cv-04417-JPO", "1-21-cv-04417"),
        ("2:08-cv-04256-HGB-SS", "2-08-cv-04256"),
        ("3:17-CV-12090", "3-17-cv-12090"),
        ("21-1234", "21-1234"),
        ("", ""),
    ],
)
def test_normalize_docket_number(number, expected):
    assert cl.normalize_docket_number(number) == expected


def test_doc_id_falls_back_to_the_docket_id():
    assert cl.complaint_doc_id("nysd", "1:21-cv-04417-JPO") == "nysd-1-21-cv-04417"
    assert cl.complaint_doc_id("nysd", "", 42) == "nysd-docket-42"


@pytest.mark.parametrize(
    ("nos", "expected"),
    [
        ("442 Civil Rights: Jobs", True),
        ("Civil Rights: Jobs", True),
        ("445 Civil Rights: Americans with Disabilities - Employment", False),
        ("4420 Something", False),
        ("440 Civil Rights: Other", False),
        (None, False),
    ],
)
def test_is_employment_nos(nos, expected):
    assert cl.is_employment_nos(nos) is expected


def test_complaint_candidates_ranking():
    def doc(id_, number, attachment, description):
        return {"id": id_, "document_number": number, "attachment_number": attachment,
                "description": description}

    docs = [
        doc(1, 1, None, "MOTION for Leave to Proceed in forma pauperis by Jane Roe."),
        doc(2, 1, 1, "COMPLAINT (cover sheet)"),
        doc(3, 4, None, "COMPLAINT against Acme Corp."),
        doc(4, 9, None, "AMENDED COMPLAINT"),
    ]
    ranked = cl.complaint_candidates(docs)
    assert [(d["id"], w is None) for d, w in ranked] == [(3, True), (1, False)]
    assert "MOTION for Leave" in ranked[1][1]

    removal = [{"id": 5, "document_number": "1", "attachment_number": None,
                "description": "NOTICE OF REMOVAL from Superior Court (Attachments: # 1 Complaint)"}]
    assert cl.complaint_candidates(removal) == []


# ------------------------------------------------------------------------------------- CLI


def test_cli_command_fetches_and_prints_a_summary(standin, token_env, tmp_path, monkeypatch):
    import typer
    from typer.testing import CliRunner

    app = typer.Typer()
    app.command()(cl.courtlistener_command)
    monkeypatch.setenv("COURTLISTENER_API_BASE_URL", standin.base_url)
    runner = CliRunner()

    result = runner.invoke(app, ["--out", str(tmp_path), "--limit", "5", "--court", "laed,ohsd,mad"])
    assert result.exit_code == 0, result.output
    assert "2 written" in result.output and "1 skipped" in result.output
    assert (tmp_path / "laed-2-08-cv-04256.txt").exists()

    monkeypatch.delenv("COURTLISTENER_TOKEN")
    result = runner.invoke(app, ["--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "COURTLISTENER_TOKEN" in result.output


# ------------------------------------------------------------------------------ the PDF route

NO_TEXT_PDF = "recap/gov.uscourts.mad.193254/gov.uscourts.mad.193254.1.0.pdf"  # the filepath_local of NO_TEXT_ID


@pytest.fixture(scope="module")
def complaint_pdf(tmp_path_factory) -> bytes:
    """A two-page complaint typeset to a text-layer PDF by headless Chromium (bench/make_pdfs.py)."""
    from tests.test_ingest_pdf import _make_pdfs, _needs

    _needs()
    text = ("Case 3:17-cv-12090 Document 1 Filed 10/24/17 Page 1 of 2\n\nFACTS\n\n"
            "1.     Plaintiff Kathleen O'Donnell was hired by the Academy in 2009.\n\n"
            "2.     The Academy terminated her employment on June 2, 2016.\n\f"
            "Case 3:17-cv-12090 Document 1 Filed 10/24/17 Page 2 of 2\n\n"
            "3.     She filed a charge of discrimination with the EEOC.\n")
    return _make_pdfs().typeset(text, tmp_path_factory.mktemp("cl") / "complaint.pdf").read_bytes()


def test_a_document_without_text_comes_from_its_pdf_kept_beside_it(standin, token_env, tmp_path, complaint_pdf):
    from argus.ingest.files import iter_paths, read_text_document
    from argus.ingest.pdf import sha256_file

    standin.files[NO_TEXT_PDF] = complaint_pdf
    out = tmp_path / "complaints"
    report = cl.fetch_to_folder(out, base_url=standin.base_url, storage_url=standin.storage_url)
    assert NO_TEXT_ID in report.fetched and not report.skipped
    pdf, (text_path, meta_path) = out / f"{NO_TEXT_ID}.pdf", cl.complaint_paths(out, NO_TEXT_ID)
    assert pdf.read_bytes() == complaint_pdf
    text = text_path.read_text(encoding="utf-8")
    assert text.count("\f") == 1 and "terminated her employment on June 2, 2016." in text
    meta = json.loads(meta_path.read_text())
    assert meta["metadata"]["pdf_sha256"] == sha256_file(pdf) and meta["metadata"]["pages"] == 2
    assert meta["warnings"][0].startswith("no plain text in RECAP (OCR Needed): the text is the PDF route's")
    assert [r.path for r in standin.requests_to("/storage/")] == [f"/storage/{NO_TEXT_PDF}"]
    assert standin.requests_to("/storage/")[0].authorization is None  # the token goes to the API only
    listed = list(iter_paths([out]))  # the PDF beside its text is not read twice
    assert pdf not in listed and text_path in listed
    assert [s for s in read_text_document(text_path).text.split("\f")] == text.split("\f")


def test_a_pdf_that_cannot_be_downloaded_leaves_the_document_skipped_with_both_reasons(standin, token_env, tmp_path):
    report = cl.fetch_to_folder(tmp_path, base_url=standin.base_url, storage_url=standin.storage_url)
    assert [s.doc_id for s in report.skipped] == [NO_TEXT_ID]
    assert "OCR Needed" in report.skipped[0].reason and "its PDF was not read" in report.skipped[0].reason
    assert "(HTTP 404 Not Found)" in report.skipped[0].reason
    assert not list(tmp_path.glob("*.pdf"))
    plain = cl.fetch_to_folder(tmp_path / "none", base_url=standin.base_url, pdfs=False)
    assert "its PDF" not in plain.skipped[0].reason
