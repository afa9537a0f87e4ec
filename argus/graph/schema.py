"""The Event Knowledge Graph schema: entities, 5W1H-style events, temporal and causal edges.

Two layers share these models:

- **LLM-facing** (``Entity``, ``Event``, ``TemporalEdge``, ``CausalEdge``, ``Stage1Output``,
  ``Stage2Output``): what Stage 1 / Stage 2 and the one-shot baseline emit; ids are local to one
  chunk (``E1``, ``EV1``).
- **Document-level** (``DocumentEKG``): the merged graph with document ids, the provenance of every
  node (``sources``: the chunks it came from), every sentence with its span and fact decision, the
  chunks, the mini-graphs, the merge log and the cost ledger.

``DocumentEKG.model_json_schema()`` is the exported JSON Schema (``argus schema``); the committed
copy lives in ``argus/resources/ekg.schema.json``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from argus.text.caption import Caption
from argus.text.documents import DocumentKind
from argus.models.ledger import LedgerEntry, Totals

SCHEMA_VERSION = "1.3"
"""1.3: the source file's SHA-256, its pages and those read by OCR (``DocumentEKG.source_sha256``, ``pages``,
``ocr_pages``), and each sentence's page (``SentenceRecord.page``); 1.2 files read as they are. 1.2: the caption read from the filing (``DocumentEKG.caption``) and the extraction designs
``sentence`` and ``floor`` (``DocumentEKG.method``). 1.1: character grounding (``DocumentEKG.text``,
entity ``mentions``, event ``trigger_span``, ``rejected``). 1.1 files read as they are; 1.0 files are
upgraded on reading when their source file is at hand (``argus.output.export.load_ekg``)."""

READABLE_VERSIONS = ("1.1", "1.2", "1.3")
"""Schema versions that validate as this version's ``DocumentEKG`` without an upgrade."""

METHODS = ("staged", "sentence", "oneshot", "floor")
"""How a graph was made: ``staged`` (the chunked two-stage design), ``sentence`` (the sentence-level
design), ``oneshot`` (the one-call baseline), ``floor`` (no language model: keyword rules)."""


EntityKind = Literal["person", "organization", "group", "document", "location", "other"]
LegalRole = Literal[
    "plaintiff", "defendant", "employer", "supervisor", "coworker", "decision_maker", "hr",
    "witness", "agency", "comparator", "other",
]
EventType = Literal[
    "hiring", "promotion", "demotion", "complaint", "harassment", "discrimination",
    "accommodation_request", "accommodation_denial", "leave", "discipline", "investigation",
    "termination", "resignation", "pay_decision", "schedule_change", "communication", "medical",
    "charge_filing", "other",
]
TimeKind = Literal["explicit", "relative", "unknown"]
TemporalRelation = Literal["BEFORE", "AFTER", "OVERLAP", "SAME_TIME"]
CausalRelation = Literal["CAUSES", "ENABLES", "PREVENTS"]
MatchKind = Literal["exact", "normalized", "fuzzy"]

SentenceId = Annotated[str, StringConstraints(pattern=r"^S[1-9][0-9]*$")]
EntityId = Annotated[str, StringConstraints(pattern=r"^E[1-9][0-9]*$")]
EventId = Annotated[str, StringConstraints(pattern=r"^EV[1-9][0-9]*$")]

EVENT_TYPES: tuple[str, ...] = EventType.__args__  # type: ignore[attr-defined]
LEGAL_ROLES: tuple[str, ...] = LegalRole.__args__  # type: ignore[attr-defined]
ENTITY_KINDS: tuple[str, ...] = EntityKind.__args__  # type: ignore[attr-defined]
TEMPORAL_RELATIONS: tuple[str, ...] = TemporalRelation.__args__  # type: ignore[attr-defined]
CAUSAL_RELATIONS: tuple[str, ...] = CausalRelation.__args__  # type: ignore[attr-defined]

# FrameNet-style frames offered as optional hints to Stage 1 (event typing guidance).
FRAME_HINTS: dict[str, str] = {
    "Hiring": "an employer hires or engages a person (event type hiring)",
    "Firing": "an employer terminates a person's employment (termination)",
    "Quitting": "a person resigns or is constructively discharged (resignation)",
    "Change_of_leadership": "a person is promoted or appointed to a position (promotion)",
    "Rewards_and_punishments": "discipline, warnings, write-ups, suspensions, demotions (discipline / demotion)",
    "Complaining": "a person complains about or reports mistreatment (complaint)",
    "Reporting": "a person reports misconduct to HR, a manager or an agency (complaint / charge_filing)",
    "Request": "a person asks for something, e.g. an accommodation or leave (accommodation_request / leave)",
    "Deny_or_grant_permission": "a request is granted or denied (accommodation_denial / leave)",
    "Statement": "someone says or writes something (communication)",
    "Harassment": "demeaning remarks, slurs, unwanted touching or advances (harassment)",
    "Retaliation": "an adverse action taken because of protected activity (discipline / termination / demotion)",
    "Scrutiny": "an investigation or review of a complaint or of the employee (investigation)",
    "Commerce_pay": "pay, raises, bonuses, commissions (pay_decision)",
    "Leave_of_absence": "medical, FMLA, parental or military leave (leave)",
    "Medical_conditions": "a diagnosis, injury, pregnancy or treatment (medical)",
    "Assigning": "shift, schedule, territory or duty changes (schedule_change)",
    "Submitting_documents": "filing an EEOC or state-agency charge (charge_filing)",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Entity(_Strict):
    """A participant: person, organization, group, document, location."""

    id: EntityId = Field(description="Local id, E1..En")
    name: str = Field(description="Fullest name used in the text")
    kind: EntityKind
    role: LegalRole = Field(description="Canonical legal role in the case")
    aliases: list[str] = Field(default_factory=list, description="Other names used in the text for it")


class Participant(_Strict):
    entity: EntityId = Field(description="Id of an entity in the same output")
    role: str = Field(description="Event role: agent, patient, recipient, speaker, addressee, theme, place, …")


class EventTime(_Strict):
    kind: TimeKind
    value: str | None = Field(
        default=None, description="ISO date ('2019-03-03', '2019-03') when explicit; the phrase when relative; null when unknown"
    )


class Event(_Strict):
    """One distinct occurrence stated in the source (5W1H: who, what, whom, when, where, why via edges)."""

    id: EventId = Field(description="Local id, EV1..EVn")
    type: EventType
    verb: str = Field(description="Main verb, base form (hire, fire, tell, complain, …)")
    trigger: str = Field(description="The words in the text that state the event")
    frame: str | None = Field(default=None, description="FrameNet-style frame name, if any")
    participants: list[Participant] = Field(default_factory=list)
    time: EventTime
    evidence: list[SentenceId] = Field(min_length=1, description="Ids of the sentences that state the event")
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)


class TemporalEdge(_Strict):
    source: EventId
    target: EventId
    relation: TemporalRelation
    evidence: list[SentenceId] = Field(min_length=1, description="Sentences that support the relation")


class CausalEdge(_Strict):
    source: EventId
    target: EventId
    relation: CausalRelation
    evidence: list[SentenceId] = Field(min_length=1, description="Sentences that allege the link")


class Stage1Output(_Strict):
    entities: list[Entity]
    events: list[Event]


class Stage2Output(_Strict):
    temporal_edges: list[TemporalEdge]
    causal_edges: list[CausalEdge]


class EventGraph(_Strict):
    """A graph in the LLM-facing shape (mini-graph, gold graph, one-shot output)."""

    entities: list[Entity] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    temporal_edges: list[TemporalEdge] = Field(default_factory=list)
    causal_edges: list[CausalEdge] = Field(default_factory=list)


# ----------------------------------------------------------------------------- document level


class Chunk(_Strict):
    id: str = Field(description="C1..Cn")
    sentence_ids: list[SentenceId]
    theme: str = ""


class Mention(_Strict):
    """Where a name, alias or trigger stands in the original text (``argus.graph.grounding``)."""

    sentence_id: SentenceId
    span: tuple[int, int] = Field(description="[start, end) into the original text (DocumentEKG.text), inside the sentence")
    text: str = Field(description="text[start:end], as printed in the filing")
    match: MatchKind = Field(description="exact; normalized (case, whitespace, quotes, line-break hyphens); fuzzy")


class RejectedItem(_Strict):
    """Something a stage wrote that grounding took out of the graph, and why."""

    kind: Literal["entity", "event", "name", "alias", "participant", "temporal_edge", "causal_edge"]
    id: str = Field(description="The item's id, chunk-qualified for mini-graph items ('C2:E3')")
    stage: str = Field(description="The stage that wrote it: stage1, oneshot, merge")
    reason: str
    item: dict = Field(default_factory=dict, description="The item as it was written")


class MiniGraph(_Strict):
    """The Stage 1 + Stage 2 output of one chunk, after validation, repair and grounding."""

    chunk_id: str
    graph: EventGraph
    attempts: dict[str, int] = Field(default_factory=dict, description="LM attempts per stage")
    issues: list[str] = Field(default_factory=list, description="What validation found and how it was repaired")
    spans: dict[str, list[Mention]] = Field(
        default_factory=dict, description="Entity id → its mentions; event id → [its trigger], in the original text")
    rejected: list[RejectedItem] = Field(default_factory=list, description="Stage 1 items that could not be grounded")
    ungrounded: list[str] = Field(default_factory=list, description="Ids of ungrounded items kept (--keep-ungrounded)")


class DocEntity(Entity):
    sources: list[str] = Field(default_factory=list, description="Chunks (and local ids) the entity came from, e.g. 'C2:E1'")
    mentions: list[Mention] = Field(default_factory=list, description="Where its name and aliases occur in the text")
    grounded: bool = Field(default=True, description="False: kept by --keep-ungrounded although no mention was found")


class DocEvent(Event):
    sources: list[str] = Field(default_factory=list, description="Chunks (and local ids) the event came from, e.g. 'C2:EV3'")
    trigger_span: tuple[int, int] | None = Field(
        default=None, description="[start, end) of the trigger in the original text, inside an evidence sentence")
    trigger_match: MatchKind | None = None
    grounded: bool = Field(default=True, description="False: kept by --keep-ungrounded although the trigger was not found")


class DocTemporalEdge(TemporalEdge):
    origin: str = Field(description="'C2' (Stage 2 of that chunk), 'resolver', 'dates' (explicit dates in order) or 'heads' (the sentence design's pair heads)")


class DocCausalEdge(CausalEdge):
    origin: str


class DocumentGraph(_Strict):
    entities: list[DocEntity] = Field(default_factory=list)
    events: list[DocEvent] = Field(default_factory=list)
    temporal_edges: list[DocTemporalEdge] = Field(default_factory=list)
    causal_edges: list[DocCausalEdge] = Field(default_factory=list)


class MergeDecision(_Strict):
    """One entry of the merge log."""

    action: Literal[
        "merge_entities", "merge_events", "drop_edge", "add_edge", "normalize_edge", "keep_separate"
    ]
    items: list[str] = Field(description="Ids involved (document ids, or chunk-qualified local ids)")
    rule: str = Field(description="'name', 'alias', 'dedup_key', 'self_loop', 'resolver:<model>', …")
    reason: str = ""


class SentenceRecord(_Strict):
    id: SentenceId
    text: str
    span: tuple[int, int]
    section: str
    section_heading: str = ""
    paragraph: int | None = None
    page: int | None = Field(default=None, description="Page of the source the sentence starts on (from 1); null when "
                             "the source is not paged (a text file without form feeds)")
    fact: bool | None
    fact_probability: float | None
    fact_path: Literal["classifier", "llm", "section", "none"]
    in_narrative: bool


class StageStats(_Strict):
    stage: str
    seconds: float
    lm_calls: int = 0
    tokens: int = 0
    cost_usd: float = 0.0


class LedgerSection(_Strict):
    entries: list[LedgerEntry]
    totals: Totals
    by_stage: dict[str, Totals]


class DocumentEKG(_Strict):
    """The document-level Event Knowledge Graph and everything needed to audit it."""

    schema_version: str = SCHEMA_VERSION
    doc_id: str
    source: str
    source_sha256: str | None = Field(default=None, description="SHA-256 of the source file's bytes as read (hex); "
                                      "null for a source that is not a file (CourtListener text)")
    pages: int | None = Field(default=None, description="Pages of the source: a PDF's, or one more than a text's form "
                              "feeds; null when the source is not paged")
    ocr_pages: list[int] = Field(default_factory=list, description="Pages of a PDF without a text layer, read by OCR "
                                 "(Tesseract)")
    method: Literal["staged", "sentence", "oneshot", "floor"] = Field(
        default="staged", description="staged: chunked two-stage design; sentence: sentence-level design; oneshot: "
                                      "one-call baseline; floor: keyword rules, no language model")
    created: str
    models: dict[str, str] = Field(description="Model string per stage (no keys, no API bases)")
    facts_section_found: bool
    document_kind: DocumentKind = Field(
        default="complaint", description="What the source is: a complaint, a court opinion (the graph is built from "
        "its background part, the discussion is read as other), an EEOC charge, a motion or brief, or other")
    caption: Caption | None = Field(default=None, description="Parties, court and case number read from the caption")
    text: str = Field(default="", description="The original text, exactly as read; every span indexes it")
    warnings: list[str] = Field(default_factory=list)
    sentences: list[SentenceRecord]
    chunks: list[Chunk] = Field(default_factory=list)
    minigraphs: list[MiniGraph] = Field(default_factory=list)
    graph: DocumentGraph
    merge_log: list[MergeDecision] = Field(default_factory=list)
    rejected: list[RejectedItem] = Field(
        default_factory=list, description="Items taken out because they could not be grounded in the text, with the reason")
    stages: list[StageStats] = Field(default_factory=list)
    ledger: LedgerSection


def id_order(ident: str) -> tuple[int, str]:
    """The sort key of a numbered id (sentence ``S12``, event ``EV3``, entity ``E7``): by its number,
    ids without one last, ties by the id itself. Every ordering of ids by number uses it."""
    digits = ident.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
    return (int(digits), ident) if digits.isdigit() else (1 << 30, ident)


def export_json_schema() -> dict:
    schema = DocumentEKG.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://argus.invalid/ekg/{SCHEMA_VERSION}/schema.json"
    return schema
