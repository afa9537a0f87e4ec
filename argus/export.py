"""Export a DocumentEKG: JSON (the schema), networkx MultiDiGraph, GraphML."""

from __future__ import annotations

import io
import json
from pathlib import Path

import networkx as nx

from argus.io import write_json_atomic, write_text_atomic
from argus.schema import DocumentEKG


def to_networkx(ekg: DocumentEKG) -> nx.MultiDiGraph:
    """Entities and events as typed nodes; participation, temporal and causal edges as typed edges.

    List-valued attributes are JSON strings so that the graph can be written as GraphML.
    """
    g = nx.MultiDiGraph(doc_id=ekg.doc_id, source=ekg.source, method=ekg.method)
    for e in ekg.graph.entities:
        g.add_node(e.id, node_type="entity", name=e.name, kind=e.kind, role=e.role,
                   aliases=json.dumps(e.aliases, ensure_ascii=False), sources=json.dumps(e.sources))
    for ev in ekg.graph.events:
        g.add_node(ev.id, node_type="event", event_type=ev.type, verb=ev.verb, trigger=ev.trigger,
                   frame=ev.frame or "", time_kind=ev.time.kind, time_value=ev.time.value or "",
                   evidence=json.dumps(ev.evidence), confidence=float(ev.confidence), sources=json.dumps(ev.sources))
        for p in ev.participants:
            g.add_edge(ev.id, p.entity, key=f"participant:{p.role}", edge_type="participant", relation=p.role,
                       evidence=json.dumps(ev.evidence))
    for kind, edges in (("temporal", ekg.graph.temporal_edges), ("causal", ekg.graph.causal_edges)):
        for e in edges:
            g.add_edge(e.source, e.target, key=f"{kind}:{e.relation}", edge_type=kind, relation=e.relation,
                       evidence=json.dumps(e.evidence), origin=e.origin)
    return g


def write_ekg(ekg: DocumentEKG, out_dir: str | Path, *, graphml: bool = True) -> dict[str, Path]:
    """Write ``<doc_id>.ekg.json`` (and ``<doc_id>.graphml``) atomically; returns the paths."""
    out = Path(out_dir)
    paths = {"json": write_json_atomic(out / f"{ekg.doc_id}.ekg.json", ekg.model_dump(mode="json"))}
    if graphml:
        buf = io.StringIO()
        for line in nx.generate_graphml(to_networkx(ekg)):
            buf.write(line + "\n")
        paths["graphml"] = write_text_atomic(out / f"{ekg.doc_id}.graphml", buf.getvalue())
    return paths


def load_ekg(path: str | Path) -> DocumentEKG:
    return DocumentEKG.model_validate_json(Path(path).read_text(encoding="utf-8"))
