"""Export a DocumentEKG: JSON (the schema), networkx MultiDiGraph, GraphML."""

from __future__ import annotations

import io
import json
from pathlib import Path

import networkx as nx

from argus.io import write_json_atomic, write_text_atomic
from argus.graph.schema import DocumentEKG


def to_networkx(ekg: DocumentEKG) -> nx.MultiDiGraph:
    """Entities and events as typed nodes; participation, temporal and causal edges as typed edges.

    List-valued attributes are JSON strings so that the graph can be written as GraphML.
    """
    g = nx.MultiDiGraph(doc_id=ekg.doc_id, source=ekg.source, method=ekg.method)
    for e in ekg.graph.entities:
        g.add_node(e.id, node_type="entity", name=e.name, kind=e.kind, role=e.role,
                   aliases=json.dumps(e.aliases, ensure_ascii=False), sources=json.dumps(e.sources),
                   mentions=json.dumps([[m.sentence_id, *m.span, m.match] for m in e.mentions]), grounded=e.grounded)
    for ev in ekg.graph.events:
        g.add_node(ev.id, node_type="event", event_type=ev.type, verb=ev.verb, trigger=ev.trigger,
                   frame=ev.frame or "", time_kind=ev.time.kind, time_value=ev.time.value or "",
                   evidence=json.dumps(ev.evidence), confidence=float(ev.confidence), sources=json.dumps(ev.sources),
                   trigger_span=json.dumps(list(ev.trigger_span) if ev.trigger_span else None),
                   trigger_match=ev.trigger_match or "", grounded=ev.grounded)
        for p in ev.participants:
            g.add_edge(ev.id, p.entity, key=f"participant:{p.role}", edge_type="participant", relation=p.role,
                       evidence=json.dumps(ev.evidence))
    for kind, edges in (("temporal", ekg.graph.temporal_edges), ("causal", ekg.graph.causal_edges)):
        for e in edges:
            g.add_edge(e.source, e.target, key=f"{kind}:{e.relation}", edge_type=kind, relation=e.relation,
                       evidence=json.dumps(e.evidence), origin=e.origin)
    return g


def write_ekg(ekg: DocumentEKG, out_dir: str | Path, *, graphml: bool = True) -> dict[str, Path]:
    """Write ``<doc_id>.graphml`` and then ``<doc_id>.ekg.json``, each atomically; returns the paths.
    The EKG comes last: it is what ``--skip-existing`` looks for, so it exists only once both are written."""
    out = Path(out_dir)
    if not ekg.doc_id or ekg.doc_id in (".", "..") or any(c in ekg.doc_id for c in "/\\\x00"):
        from argus.errors import InputError

        raise InputError(f"document id {ekg.doc_id!r} cannot be a file name in {out}: it would write outside the "
                         "output folder (argus.ingest.files.doc_id_for makes one from a path)")
    paths = {}
    if graphml:
        buf = io.StringIO()
        for line in nx.generate_graphml(to_networkx(ekg)):
            buf.write(line + "\n")
        paths["graphml"] = write_text_atomic(out / f"{ekg.doc_id}.graphml", buf.getvalue())
    paths["json"] = write_json_atomic(out / f"{ekg.doc_id}.ekg.json", ekg.model_dump(mode="json"))
    return paths


def load_ekg(path: str | Path) -> DocumentEKG:
    """Read an EKG file; a clear ``InputError`` when it is not one, or of a schema this version cannot read.

    Schema 1.0 files (before character grounding) are upgraded in memory when the source file they
    name is readable and its sentences sit where the file says (``argus.graph.grounding.upgrade_1_0``);
    otherwise the message says to re-run ``argus extract``.
    """
    import pydantic

    from argus.errors import InputError
    from argus.graph.schema import READABLE_VERSIONS, SCHEMA_VERSION

    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path}: not a JSON file ({exc}); expected an EKG written by 'argus extract' (*.ekg.json)") from None
    if not isinstance(data, dict) or not {"doc_id", "sentences", "graph"} <= set(data):
        raise InputError(f"{path}: not an EKG (a document Event Knowledge Graph has doc_id, sentences and graph); "
                         "expected a *.ekg.json file written by 'argus extract'")
    version = str(data.get("schema_version", "1.0"))
    if version == "1.0" and SCHEMA_VERSION != "1.0":
        data = _upgrade_1_0(path, data)
    elif version not in READABLE_VERSIONS:
        raise InputError(f"{path}: EKG schema {version}, which this version of argus (schema {SCHEMA_VERSION}) cannot "
                         "read; upgrade argus or re-run 'argus extract'")
    try:
        return DocumentEKG.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise InputError(f"{path}: an EKG of schema {version} that does not validate ({exc.error_count()} problem(s); "
                         f"first at {where or 'top level'}: {first.get('msg')})") from None


def _upgrade_1_0(path: Path, data: dict) -> dict:
    from rapidfuzz import fuzz

    from argus.errors import InputError
    from argus.graph.grounding import match_form, upgrade_1_0
    from argus.ingest.files import read_text_document

    source = Path(str(data.get("source", "")))
    hint = "re-run 'argus extract' on the complaint to write schema 1.1"
    if not source.is_file():
        raise InputError(f"{path}: EKG schema 1.0 carries no source text and its source {str(source)!r} is not readable; "
                         f"{hint}")
    text = read_text_document(source).text
    sents = data.get("sentences", [])
    fits = sum(1 for s in sents if s["span"][1] <= len(text)
               and fuzz.ratio(match_form(text[s["span"][0]:s["span"][1]]), match_form(s["text"])) >= 80)
    if not sents or fits < 0.9 * len(sents):
        raise InputError(f"{path}: EKG schema 1.0 whose source {str(source)!r} has changed since extraction "
                         f"({fits} of {len(sents)} sentences still in place); {hint}")
    return upgrade_1_0(data, text)
