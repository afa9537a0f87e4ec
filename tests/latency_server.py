"""A loopback OpenAI-compatible chat server with a set latency: an instrument, not a model.

What it is for: measuring how many documents per minute the pipeline gets through when every LM call
takes as long as a hosted API's does (seconds, not the milliseconds of a scripted test double), and
testing how the client side handles rate limits (HTTP 429 with ``Retry-After``) and server errors
(HTTP 500), against a real HTTP server that litellm and ``dspy.LM`` talk to exactly as they talk to
a hosted API or a vLLM / llama.cpp server.

    from tests.latency_server import LatencyServer
    with LatencyServer(latency_s=2.0, jitter_s=0.5) as server:
        cfg = ArgusConfig(lm={"default": {"model": "openai/fake", "api_base": server.url,
                                          "structured_output": "json_object_schema", "cache": False}})
        ...
        print(server.stats().max_in_flight)

    python -m tests.latency_server --latency 2 --port 8099     # standalone; Ctrl-C stops

Endpoints (on 127.0.0.1, a free port unless one is given):

- ``POST /v1/chat/completions`` (also ``/chat/completions``): answers after ``latency_s`` plus a
  uniform jitter in ``[0, jitter_s]``, counted from the request's arrival, slept in the handler's
  own thread (``ThreadingHTTPServer``: one thread per connection, so requests in flight overlap
  and, with jitter, are answered in random order). Faults are answered after ``fault_latency_s``
  (default 0: at once).
- ``GET /v1/models``: one model, ``model_name``.
- ``GET /stats``: ``LatencyServer.stats()`` as JSON (``?requests=0`` leaves out the per-request
  records); ``POST /stats/reset``: ``reset_stats()``.

The answer is a deterministic function of the request's ``messages`` and ``response_format`` (never
of arrival order, time, the model name or the sampling options): every choice is drawn from a
``random.Random`` seeded with the sha256 of the canonical JSON of those two, and of the place in
the answer being generated. With a JSON Schema (``response_format={"type": "json_object",
"schema": S}`` as llama.cpp takes it, or ``{"type": "json_schema", "json_schema": {"schema": S}}``
as OpenAI and vLLM take it) the content is a JSON instance of ``S`` (see ``generate_instance``):
strings are a few words of the user messages, ``"id"`` properties with an id pattern (``^E[1-9][0-9]*$``)
are numbered by their position in the enclosing list, and other strings of an id pattern refer to
ids generated in the same answer (or, failing that, to labels in the prompt), so answers pass
the pipeline's grounding checks the way a competent model's would. Without a schema, a DSPy
prompt (``ChatAdapter``'s ``[[ ## field ## ]]`` or ``JSONAdapter``'s JSON object) is answered in
its own format with its output fields; anything else gets a few words (or ``{}`` under JSON mode).

Faults: the first ``fail_first_n_429`` requests get HTTP 429; after them each request gets 429
with probability ``fail_rate_429``, else 500 with probability ``fail_rate_500``. The draws depend
only on ``seed`` and the request's arrival number (not on its body), so a sequential client sees
the same faults on every run. A 429 carries ``Retry-After: <retry_after_s>`` (and
``retry-after-ms``) and an OpenAI-style error body. Two transport faults come after those (drawn
from the same per-arrival generator, after the draws above, so adding them leaves the HTTP faults of
a seed as they were): with probability ``fail_rate_timeout`` the request is held for
``timeout_delay_s`` (a client whose timeout is shorter gives up first; a client still waiting then
gets the normal answer, one that closed the connection gets nothing), else with probability
``fail_rate_reset`` the connection is reset mid-response: the status line, headers (with the full
``Content-Length``) and half of the answer's body are written, then the socket is closed with
``SO_LINGER`` 0 (a TCP RST, recorded with status 499). They are counted in ``timeouts`` and
``resets``.

Usage in the answer: ``prompt_tokens`` = characters of the messages' contents // 4 and
``completion_tokens`` = characters of the content // 4 (at least 1 each): a rough stand-in, not
a tokenizer.

Options are read per request, so they can be changed on a running server (``server.latency_s = 0.5``).

Measured on a 2-core machine: 64 and 128 simultaneous clients at ``latency_s=1.0`` were all
answered (HTTP 200) within 1.1 and 1.2 s of wall time, with ``max_in_flight`` 64 and 128.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import math
import random
import re
import socket
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

try:  # Python >= 3.11
    import re._parser as _sre_parse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse as _sre_parse  # type: ignore[no-redef]

__all__ = [
    "LatencyServer",
    "RequestRecord",
    "ServerStats",
    "answer_content",
    "generate_instance",
    "request_key",
    "request_schema",
]


# ============================================================================ deterministic answers


def request_key(body: dict) -> str:
    """sha256 of the canonical JSON of the request's ``messages`` and ``response_format``: the seed
    of its answer."""
    payload = {"messages": body.get("messages"), "response_format": body.get("response_format")}
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def request_schema(body: dict) -> dict | None:
    """The JSON Schema a request asks the answer to follow, if any (llama.cpp or OpenAI style)."""
    rf = body.get("response_format")
    if not isinstance(rf, dict):
        return None
    if isinstance(rf.get("schema"), dict):
        return rf["schema"]
    js = rf.get("json_schema")
    if isinstance(js, dict) and isinstance(js.get("schema"), dict):
        return js["schema"]
    return None


def _message_text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, ...]
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def _prompt_chars(body: dict) -> int:
    return sum(len(_message_text(m)) for m in body.get("messages") or [] if isinstance(m, dict))


_STOPWORDS = frozenset(
    """the and that this with from for was were are is be been being have has had not but its his her
    their they them she him you your our who whom which what when where why how all any each also into
    onto upon than then there these those such very more most other some only same over under after
    before about above below again further once here both few own too can will just don should now
    did does doing would could shall may might must out off per via""".split()
)
_DEFAULT_WORDS = ["plaintiff", "employer", "manager", "complaint", "meeting", "termination", "email", "office"]
_DSPY_MARKER = re.compile(r"\[\[ ## [^\]]+ ## \]\]")
_LABEL = re.compile(r"\[[A-Z]{1,3}\d+\]")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*[A-Za-z]")
_ID_TOKEN = re.compile(r"\b[A-Z]{1,3}[0-9]+\b")
_ID_PATTERN = re.compile(r"^\^?([A-Za-z_]+)(?:\[1-9\]\[0-9\]\*|\[1-9\]\\d\*|\\d\+|\[0-9\]\+|\\d\*|\[0-9\]\*)\$?$")
_LONG_TEXT_NAMES = frozenset({"reason", "rationale", "explanation", "justification", "summary", "answer", "reasoning"})


_DSPY_TAIL = re.compile(r"^Respond with (?:the corresponding output fields|a JSON object)\b.*?(?:\n\n|\Z)", re.M | re.S)


def _prompt_words(text: str) -> list[str]:
    text = _LABEL.sub(" ", _DSPY_MARKER.sub(" ", _DSPY_TAIL.sub(" ", text)))
    return [w for w in _WORD.findall(text) if len(w) >= 3 and w.lower() not in _STOPWORDS]


def _user_text(body: dict) -> str:
    msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    users = [_message_text(m) for m in msgs if m.get("role") == "user"]
    return "\n".join(users) if users else "\n".join(_message_text(m) for m in msgs)


# ---------------------------------------------------------------------------- regular expressions


def _sample_regex(pattern: str, rng: random.Random, max_repeat: int = 3) -> str | None:
    """A string for a (simple) regular expression, from Python's own regex parser; ``None`` when the
    pattern is not understood. The caller checks the result with ``re.search``."""
    try:
        parsed = _sre_parse.parse(pattern)
    except Exception:
        return None
    letters = "abcdefghijklmnopqrstuvwxyz"
    pool = letters + letters.upper() + "0123456789 _-."
    categories = {
        "CATEGORY_DIGIT": "0123456789",
        "CATEGORY_NOT_DIGIT": letters,
        "CATEGORY_WORD": letters + "0123456789",
        "CATEGORY_NOT_WORD": " -",
        "CATEGORY_SPACE": " ",
        "CATEGORY_NOT_SPACE": letters,
    }
    out: list[str] = []

    def char_of_set(items) -> str:
        negate = any(str(op) == "NEGATE" for op, _ in items)
        if negate:
            members = [c for c in pool if _in_set(c, items)]
            candidates = [c for c in pool if c not in members]
            return rng.choice(candidates) if candidates else "x"
        choices = [(op, av) for op, av in items if str(op) != "NEGATE"]
        if not choices:
            return "x"
        op, av = rng.choice(choices)
        name = str(op)
        if name == "LITERAL":
            return chr(av)
        if name == "RANGE":
            return chr(rng.randint(av[0], av[1]))
        if name == "CATEGORY":
            return rng.choice(categories.get(str(av), letters))
        return "x"

    def emit(seq) -> None:
        for op, av in seq:
            name = str(op)
            if name == "LITERAL":
                out.append(chr(av))
            elif name == "NOT_LITERAL":
                out.append(rng.choice([c for c in letters if c != chr(av)]))
            elif name == "ANY":
                out.append(rng.choice(letters))
            elif name == "IN":
                out.append(char_of_set(av))
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                lo, hi, sub = av
                hi = min(hi, lo + max_repeat)
                for _ in range(rng.randint(lo, hi)):
                    emit(sub)
            elif name == "SUBPATTERN":
                emit(av[-1])
            elif name == "ATOMIC_GROUP":
                emit(av)
            elif name == "BRANCH":
                emit(rng.choice(av[1]))
            elif name == "CATEGORY":
                out.append(rng.choice(categories.get(str(av), letters)))
            # AT (anchors), ASSERT, ASSERT_NOT, GROUPREF, ...: nothing to emit

    try:
        emit(parsed)
    except Exception:
        return None
    return "".join(out)


def _in_set(c: str, items) -> bool:
    for op, av in items:
        name = str(op)
        if name == "LITERAL" and c == chr(av):
            return True
        if name == "RANGE" and av[0] <= ord(c) <= av[1]:
            return True
        if name == "CATEGORY":
            cat = str(av)
            checks = {
                "CATEGORY_DIGIT": c.isdigit(), "CATEGORY_NOT_DIGIT": not c.isdigit(),
                "CATEGORY_WORD": c.isalnum() or c == "_", "CATEGORY_NOT_WORD": not (c.isalnum() or c == "_"),
                "CATEGORY_SPACE": c.isspace(), "CATEGORY_NOT_SPACE": not c.isspace(),
            }
            if checks.get(cat):
                return True
    return False


# ---------------------------------------------------------------------------- JSON Schema instances


class _Generator:
    """One answer's instance of one schema (see ``generate_instance``)."""

    def __init__(self, schema: dict, key: str, text: str):
        self.schema = schema
        self.key = key
        self.text = text
        self.words = _prompt_words(text) or list(_DEFAULT_WORDS)
        self.prompt_ids = list(dict.fromkeys(_ID_TOKEN.findall(text)))
        self.defs: dict[str, Any] = {}
        self.ids: dict[str, list[str]] = {}  # prefix -> ids defined by "id" properties, this pass
        self.known: dict[str, list[str]] = {}  # ... in the first pass (references may point forward)

    def run(self):
        self.gen(self.schema, "$", None, None, {})  # first pass: which ids exist
        self.known, self.ids = self.ids, {}
        return self.gen(self.schema, "$", None, None, {})

    def rng(self, path: str, purpose: str = "") -> random.Random:
        digest = hashlib.sha256(f"{self.key}|{path}|{purpose}".encode()).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))

    # ------------------------------------------------------------------ schema plumbing

    def _collect_defs(self, node: dict) -> None:
        for k in ("$defs", "definitions"):
            if isinstance(node.get(k), dict):
                for name, sub in node[k].items():
                    self.defs.setdefault(name, sub)

    def resolve(self, node):
        seen = 0
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 32:
            seen += 1
            self._collect_defs(node)
            ref = node["$ref"]
            target = None
            if ref.startswith("#/"):
                parts = ref[2:].split("/")
                if len(parts) == 2 and parts[0] in ("$defs", "definitions"):
                    target = self.defs.get(parts[1])
                if target is None:  # a general JSON pointer into the root schema
                    cur: Any = self.schema
                    for p in parts:
                        p = p.replace("~1", "/").replace("~0", "~")
                        cur = cur.get(p) if isinstance(cur, dict) else None
                    target = cur
            elif ref == "#":
                target = self.schema
            rest = {k: v for k, v in node.items() if k != "$ref"}
            node = {**(target if isinstance(target, dict) else {}), **rest}
        if isinstance(node, dict):
            self._collect_defs(node)
        return node

    @staticmethod
    def _is_null(node) -> bool:
        return isinstance(node, dict) and (node.get("type") == "null" or node.get("const", 0) is None
                                           or node.get("enum") == [None])

    def _type(self, node: dict) -> str:
        t = node.get("type")
        if isinstance(t, list):
            rest = [x for x in t if x != "null"]
            return rest[0] if rest else "null"
        if isinstance(t, str):
            return t
        if "properties" in node or "additionalProperties" in node:
            return "object"
        if "items" in node or "prefixItems" in node:
            return "array"
        return "string"

    # ------------------------------------------------------------------ generation

    def gen(self, node, path: str, name: str | None, index: int | None, used: dict):
        node = self.resolve(node)
        if node is True or not isinstance(node, dict) or not node:
            return self.words_string(path, name, {})
        if "const" in node:
            return node["const"]
        if isinstance(node.get("enum"), list) and node["enum"]:
            return self.pick(node["enum"], path, ("enum", json.dumps(node["enum"], sort_keys=True, default=str)), used)
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list) and node[key]:
                alts = [self.resolve(a) for a in node[key]]
                real = [a for a in alts if not self._is_null(a)]
                if not real:
                    return None
                merged = {**{k: v for k, v in node.items() if k != key}, **real[0]}
                return self.gen(merged, path, name, index, used)
        if isinstance(node.get("allOf"), list) and node["allOf"]:
            merged: dict = {}
            for sub in node["allOf"]:
                merged.update(self.resolve(sub) or {})
            merged.update({k: v for k, v in node.items() if k != "allOf"})
            return self.gen(merged, path, name, index, used)
        t = self._type(node)
        if t == "object":
            return self.gen_object(node, path, index)
        if t == "array":
            return self.gen_array(node, path, name)
        if t == "string":
            return self.gen_string(node, path, name, index, used)
        if t == "integer":
            return self.gen_integer(node, path)
        if t == "number":
            return self.gen_number(node, path)
        if t == "boolean":
            return self.rng(path, "bool").random() < 0.5
        return None

    def pick(self, values: list, path: str, key, used: dict):
        """One of ``values``, preferring one that a sibling with the same choices has not taken
        (so that ``source`` and ``target`` of an edge differ)."""
        taken = used.setdefault(key, set())
        fresh = [v for v in values if json.dumps(v, sort_keys=True, default=str) not in taken]
        value = self.rng(path, "pick").choice(fresh or values)
        taken.add(json.dumps(value, sort_keys=True, default=str))
        return value

    def gen_object(self, node: dict, path: str, index: int | None) -> dict:
        props = node.get("properties") or {}
        used: dict = {}
        out = {}
        for pname, psch in props.items():
            out[pname] = self.gen(psch, f"{path}.{pname}", pname, index, used)
        for pname in node.get("required") or []:
            if pname not in out:  # required but not described: any short string
                out[pname] = self.words_string(f"{path}.{pname}", pname, {})
        return out

    def gen_array(self, node: dict, path: str, name: str | None) -> list:
        lo = int(node.get("minItems", 0) or 0)
        hi = node.get("maxItems")
        prefix = node.get("prefixItems")
        if isinstance(prefix, list):
            used: dict = {}
            return [self.gen(p, f"{path}[{i}]", None, i, used) for i, p in enumerate(prefix)]
        if hi is not None and int(hi) <= 0:
            return []
        a = max(1, lo)
        b = max(a, min(int(hi), 3) if hi is not None else 3)
        n = self.rng(path, "n").randint(a, b)
        items = self.resolve(node.get("items", {}))
        if isinstance(items, dict) and isinstance(items.get("enum"), list) and items["enum"]:
            values = list(items["enum"])
            if len(values) >= n:  # a consecutive run of distinct values, in their order
                start = self.rng(path, "start").randint(0, len(values) - n)
                return values[start : start + n]
        used = {}
        return [self.gen(items, f"{path}[{i}]", None, i, used) for i in range(n)]

    def gen_string(self, node: dict, path: str, name: str | None, index: int | None, used: dict) -> str:
        pattern = node.get("pattern")
        if isinstance(pattern, str) and pattern:
            m = _ID_PATTERN.match(pattern)
            if m:
                return self.gen_id(m.group(1), pattern, path, name, index, used)
            rng = self.rng(path, "pattern")
            for _ in range(8):
                s = _sample_regex(pattern, rng)
                if s is not None and _search(pattern, s) and _length_ok(s, node):
                    return s
        fmt = node.get("format")
        if fmt in ("date", "date-time", "time", "email", "uri", "uuid"):
            r = self.rng(path, "format")
            date = f"20{r.randint(10, 24):02d}-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"
            return {
                "date": date, "date-time": f"{date}T09:00:00Z", "time": "09:00:00",
                "email": f"{self.words[0].lower()}@example.com", "uri": "https://example.com/",
                "uuid": str(uuid.UUID(int=r.getrandbits(128), version=4)),
            }[fmt]
        return self.words_string(path, name, node)

    def gen_id(self, prefix: str, pattern: str, path: str, name: str | None, index: int | None, used: dict) -> str:
        if name == "id":  # an identifier: numbered by its place in the enclosing list
            value = f"{prefix}{(index or 0) + 1}"
            ids = self.ids.setdefault(prefix, [])
            if value not in ids:
                ids.append(value)
            return value
        # a reference: to an id of this answer, else to a label in the prompt
        candidates = list(self.known.get(prefix) or self.ids.get(prefix) or [])
        if not candidates:
            candidates = [t for t in self.prompt_ids if t.startswith(prefix) and t[len(prefix):].isdigit()
                          and _search(pattern, t)]
        if not candidates:
            candidates = [f"{prefix}{k}" for k in range(1, 4)]
        return self.pick(candidates, path, ("ref", prefix), used)

    def words_string(self, path: str, name: str | None, node: dict) -> str:
        rng = self.rng(path, "words")
        long = (name or "").lower() in _LONG_TEXT_NAMES
        k = rng.randint(5, 9) if long else rng.choice((1, 2, 2, 3))
        start = rng.randrange(len(self.words))
        picked = self.words[start : start + k]
        s = " ".join(picked) + ("." if long else "")
        lo = int(node.get("minLength", 0) or 0)
        hi = node.get("maxLength")
        while len(s) < lo:
            s += " " + self.words[rng.randrange(len(self.words))]
        if hi is not None:
            s = s[: int(hi)].rstrip() if len(s[: int(hi)].rstrip()) >= lo else s[: int(hi)]
        return s

    @staticmethod
    def _bounds(node: dict) -> tuple[float | None, float | None, bool, bool]:
        lo, hi = node.get("minimum"), node.get("maximum")
        xlo = xhi = False
        emin, emax = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
        if isinstance(emin, bool):  # draft 4
            xlo = emin
        elif isinstance(emin, (int, float)):
            lo, xlo = emin, True
        if isinstance(emax, bool):
            xhi = emax
        elif isinstance(emax, (int, float)):
            hi, xhi = emax, True
        return lo, hi, xlo, xhi

    def gen_integer(self, node: dict, path: str) -> int:
        lo, hi, xlo, xhi = self._bounds(node)
        a = (math.floor(lo) + 1 if xlo and float(lo).is_integer() else math.ceil(lo)) if lo is not None else None
        b = (math.ceil(hi) - 1 if xhi and float(hi).is_integer() else math.floor(hi)) if hi is not None else None
        if a is None and b is None:
            a, b = 0, 10
        elif a is None:
            a = min(0, b - 10) if b < 0 else max(0, b - 10)
        elif b is None:
            b = a + 10
        if b < a:
            b = a
        return self.rng(path, "int").randint(int(a), int(b))

    def gen_number(self, node: dict, path: str) -> float:
        lo, hi, xlo, xhi = self._bounds(node)
        a = float(lo) if lo is not None else (float(hi) - 1.0 if hi is not None and hi < 0 else 0.0)
        b = float(hi) if hi is not None else a + 1.0
        eps = (b - a) / 100 if b > a else 0.0
        if xlo:
            a += eps
        if xhi:
            b -= eps
        value = round(self.rng(path, "num").uniform(a, b), 2)
        return min(max(value, a), b)


def _search(pattern: str, s: str) -> bool:
    try:
        return re.search(pattern, s) is not None
    except re.error:
        return False


def _length_ok(s: str, node: dict) -> bool:
    return len(s) >= int(node.get("minLength", 0) or 0) and (node.get("maxLength") is None or len(s) <= int(node["maxLength"]))


def generate_instance(schema: dict, *, key: str = "", text: str = ""):
    """A deterministic instance of ``schema`` (a function of ``schema``, ``key`` and ``text`` only).

    Supported: ``type`` object (every listed property, in order), array (``minItems``/``maxItems``;
    1..min(maxItems, 3) items by default; an array of ``enum`` strings takes a consecutive run of
    distinct values), string (``enum``, ``const``, ``pattern`` through Python's regex parser,
    ``minLength``/``maxLength``, a few ``format``s; otherwise 1-3 words of ``text``), integer and
    number (``minimum``/``maximum``/exclusive bounds), boolean, null, ``anyOf``/``oneOf`` (the first
    non-null alternative), ``allOf`` (merged), ``$ref`` into ``$defs``/``definitions``. Strings of an
    id pattern (letters then digits, e.g. ``^EV[1-9][0-9]*$``) are numbered by their place in the
    enclosing list when the property is named ``id``, and otherwise refer to such ids of the same
    instance (or to labels such as ``S12`` in ``text``); siblings with the same choices (an edge's
    ``source`` and ``target``) take different values where they can.
    """
    return _Generator(schema, key, text).run()


# ---------------------------------------------------------------------------- DSPy prompts without a schema


def _literal_values(type_str: str) -> list | None:
    m = re.fullmatch(r"\s*Literal\[(.*)\]\s*", type_str)
    if not m:
        return None
    try:
        values = ast.literal_eval(f"[{m.group(1)}]")
    except Exception:
        return None
    return values or None


def _schema_from_note(note: str, type_str: str) -> dict:
    m = re.search(r"adhere to the JSON schema: (\{.*\})\s*$", note, re.S)
    if m:
        try:
            return json.loads(m.group(1))
        except ValueError:
            pass
    m = re.search(r"one of: (.*)$", note)
    if m:
        return {"enum": [v.strip() for v in m.group(1).split(";")]}
    if "single int value" in note:
        return {"type": "integer"}
    if "single float value" in note:
        return {"type": "number"}
    if "True or False" in note:
        return {"type": "boolean"}
    t = type_str.strip()
    literal = _literal_values(t)
    if literal:
        return {"enum": literal}
    simple = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
    if t in simple:
        return {"type": simple[t]}
    m = re.fullmatch(r"list\[(\w+)\]", t)
    if m:
        return {"type": "array", "items": {"type": simple.get(m.group(1), "string")}}
    if t.startswith("dict"):
        return {"type": "object", "properties": {}}
    return {"type": "string"}


def _dspy_output_schemas(system: str) -> list[tuple[str, dict]]:
    """(name, schema) of the output fields a DSPy ChatAdapter / JSONAdapter system prompt lists."""
    m = re.search(r"Your output fields are:\n(.*?)(?:\nAll interactions will be|\nIn adhering to this|\Z)", system, re.S)
    if not m:
        return []
    fields = re.findall(r"^\d+\. `([^`]+)` \((.*?)\):(?: |$)", m.group(1), re.M)
    notes: dict[str, str] = {}
    j = system.find("Outputs will be a JSON object with the following fields.")
    if j >= 0:
        brace = system.find("{", j)
        try:
            block, _ = json.JSONDecoder().raw_decode(system[brace:])
            notes = {k: v for k, v in block.items() if isinstance(v, str)}
        except ValueError:
            pass
    out = []
    for name, type_str in fields:
        note = notes.get(name, "")
        if not note:
            nm = re.search(r"^\{" + re.escape(name) + r"\}\s+# note: (.*)$", system, re.M)
            note = nm.group(1) if nm else ""
        out.append((name, _schema_from_note(note, type_str)))
    return out


def answer_content(body: dict) -> str:
    """The content of the answer to a chat-completion request body (deterministic, see module doc)."""
    key = request_key(body)
    text = _user_text(body)
    schema = request_schema(body)
    if schema is not None:
        return json.dumps(generate_instance(schema, key=key, text=text), ensure_ascii=False)
    msgs = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    system = "\n".join(_message_text(m) for m in msgs if m.get("role") == "system")
    rf = body.get("response_format")
    json_mode = isinstance(rf, dict) and rf.get("type") in ("json_object", "json_schema")
    fields = _dspy_output_schemas(system)
    if fields:
        obj_schema = {"type": "object", "properties": dict(fields)}
        value = generate_instance(obj_schema, key=key, text=text)
        if json_mode or "Outputs will be a JSON object" in system or "[[ ## completed ## ]]" not in system:
            return json.dumps(value, ensure_ascii=False)
        parts = []
        for name, _ in fields:
            v = value[name]
            parts.append(f"[[ ## {name} ## ]]\n{v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}")
        return "\n\n".join(parts) + "\n\n[[ ## completed ## ]]"
    if json_mode:
        return "{}"
    return generate_instance({"type": "string"}, key=key, text=text)


# ============================================================================ the server


@dataclass
class RequestRecord:
    """One chat-completion request. Times are seconds since the server started (``time.perf_counter``)."""

    seq: int  # arrival number since start (not reset by reset_stats)
    arrival_s: float
    answered_s: float | None = None  # when the response was handed to the socket (None while in flight)
    status: int | None = None  # 200, 429, 500, 400 (499: the connection failed before an answer)
    delay_s: float = 0.0  # latency + jitter it was given (or the fault latency)
    model: str | None = None
    key: str | None = None  # request_key of the body (None when it did not parse)


@dataclass
class ServerStats:
    total_requests: int = 0  # chat-completion requests received
    answered: int = 0  # ... answered with 200
    sent_429: int = 0
    sent_500: int = 0
    timeouts: int = 0  # held for timeout_delay_s (fail_rate_timeout)
    resets: int = 0  # connection reset mid-response (fail_rate_reset)
    bad_requests: int = 0  # 400: a body that is not JSON
    in_flight: int = 0  # now
    max_in_flight: int = 0  # the most in flight at once (since start or reset_stats)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: list[RequestRecord] = field(default_factory=list)

    def to_dict(self, requests: bool = True) -> dict:
        d = asdict(self)
        if not requests:
            d.pop("requests")
        return d


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # listen backlog: many clients connect at once
    allow_reuse_address = True

    def handle_error(self, request, client_address):  # a client that went away is not an error here
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)


class LatencyServer:
    """A loopback OpenAI-compatible chat server whose answers take ``latency_s`` (+ jitter).

    ``start()`` / ``stop()`` or ``with LatencyServer(...) as server``; ``url`` is the
    ``http://127.0.0.1:PORT/v1`` base for litellm's ``api_base``; ``stats()`` / ``reset_stats()``
    (also ``GET /stats``, ``POST /stats/reset``). See the module docstring for the behaviour.
    """

    def __init__(
        self,
        latency_s: float = 2.0,
        jitter_s: float = 0.0,
        seed: int = 0,
        fail_rate_429: float = 0.0,
        retry_after_s: float = 1,
        fail_rate_500: float = 0.0,
        fail_first_n_429: int = 0,
        fault_latency_s: float = 0.0,
        *,
        fail_rate_timeout: float = 0.0,
        timeout_delay_s: float = 30.0,
        fail_rate_reset: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        model_name: str = "latency-server",
        max_records: int = 200_000,
    ):
        self.latency_s = float(latency_s)
        self.jitter_s = float(jitter_s)
        self.seed = seed
        self.fail_rate_429 = float(fail_rate_429)
        self.retry_after_s = retry_after_s
        self.fail_rate_500 = float(fail_rate_500)
        self.fail_first_n_429 = int(fail_first_n_429)
        self.fault_latency_s = float(fault_latency_s)
        self.fail_rate_timeout = float(fail_rate_timeout)
        self.timeout_delay_s = float(timeout_delay_s)
        self.fail_rate_reset = float(fail_rate_reset)
        self.host = host
        self.port = int(port)
        self.model_name = model_name
        self.max_records = max_records
        self._lock = threading.Lock()
        self._stats = ServerStats()
        self._epoch = 0
        self._seq = 0
        self._t0 = time.perf_counter()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    # ------------------------------------------------------------------ lifecycle

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (``…/v1``) to give litellm as ``api_base``."""
        return f"{self.base_url}/v1"

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def start(self) -> "LatencyServer":
        if self._httpd is not None:
            return self
        owner = self

        class Handler(_Handler):
            server_owner = owner

        self._httpd = _Server((self.host, self.port), Handler)
        self.port = self._httpd.server_address[1]
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"latency-server:{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            conns = list(self._connections)
            self._connections.clear()
        for conn in conns:  # wake handler threads blocked on idle keep-alive connections
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> "LatencyServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = self.url if self.running else "stopped"
        return f"LatencyServer({state}, latency_s={self.latency_s}, jitter_s={self.jitter_s})"

    # ------------------------------------------------------------------ statistics

    def now(self) -> float:
        """Seconds since the server started (the clock of ``RequestRecord``)."""
        return time.perf_counter() - self._t0

    def stats(self) -> ServerStats:
        """A snapshot of the statistics (a copy: later requests do not change it)."""
        with self._lock:
            s = self._stats
            return ServerStats(
                total_requests=s.total_requests, answered=s.answered, sent_429=s.sent_429, sent_500=s.sent_500,
                timeouts=s.timeouts, resets=s.resets, bad_requests=s.bad_requests, in_flight=s.in_flight,
                max_in_flight=s.max_in_flight,
                prompt_tokens=s.prompt_tokens, completion_tokens=s.completion_tokens,
                requests=[RequestRecord(**asdict(r)) for r in s.requests],
            )

    def reset_stats(self) -> None:
        """Start counting afresh. Requests in flight stay counted in ``in_flight`` (and so in the new
        ``max_in_flight``); when they finish they no longer touch the other counters. The arrival
        numbers (``seq``, and with them ``fail_first_n_429`` and the fault draws) are not reset."""
        with self._lock:
            in_flight = self._stats.in_flight
            self._stats = ServerStats(in_flight=in_flight, max_in_flight=in_flight)
            self._epoch += 1

    # ------------------------------------------------------------------ request handling (handler threads)

    def _arrive(self) -> tuple[int, int, RequestRecord]:
        with self._lock:
            seq = self._seq
            self._seq += 1
            s = self._stats
            s.total_requests += 1
            s.in_flight += 1
            s.max_in_flight = max(s.max_in_flight, s.in_flight)
            record = RequestRecord(seq=seq, arrival_s=self.now())
            if len(s.requests) < self.max_records:
                s.requests.append(record)
            return seq, self._epoch, record

    def _finish(self, epoch: int, record: RequestRecord, status: int, usage: tuple[int, int] = (0, 0)) -> None:
        with self._lock:
            s = self._stats
            s.in_flight -= 1
            record.answered_s = self.now()
            record.status = status
            if epoch != self._epoch:
                return
            if status == 200:
                s.answered += 1
                s.prompt_tokens += usage[0]
                s.completion_tokens += usage[1]
            elif status == 429:
                s.sent_429 += 1
            elif status == 500:
                s.sent_500 += 1
            elif status == 400:
                s.bad_requests += 1

    def _fault(self, seq: int) -> tuple[int | str | None, float]:
        """(fault: 429, 500, "timeout", "reset" or None; jitter) of the request with arrival number ``seq``."""
        r = random.Random(f"{self.seed}:{seq}")
        u429, u500, ujit = r.random(), r.random(), r.random()
        jitter = ujit * self.jitter_s
        if seq < self.fail_first_n_429 or u429 < self.fail_rate_429:
            return 429, jitter
        if u500 < self.fail_rate_500:
            return 500, jitter
        utimeout, ureset = r.random(), r.random()  # drawn after the others: a seed's HTTP faults stay as they were
        if utimeout < self.fail_rate_timeout:
            return "timeout", jitter
        if ureset < self.fail_rate_reset:
            return "reset", jitter
        return None, jitter

    def _count(self, epoch: int, what: str) -> None:
        with self._lock:
            if epoch == self._epoch:
                setattr(self._stats, what, getattr(self._stats, what) + 1)

    def completion(self, body: dict, seq: int) -> dict:
        content = answer_content(body)
        prompt_tokens = max(1, _prompt_chars(body) // 4)
        completion_tokens = max(1, len(content) // 4)
        return {
            "id": f"chatcmpl-{seq}-{request_key(body)[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model_name,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }


def _error_body(status: int, message: str, etype: str, code: str | None) -> dict:
    return {"error": {"message": message, "type": etype, "param": None, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as hosted APIs do
    server_owner: LatencyServer  # set on the subclass made by LatencyServer.start
    timeout = 120  # an idle keep-alive connection is closed after this

    def setup(self):
        super().setup()
        with self.server_owner._lock:
            self.server_owner._connections.add(self.connection)

    def finish(self):
        try:
            super().finish()
        finally:
            with self.server_owner._lock:
                self.server_owner._connections.discard(self.connection)

    def log_message(self, format, *args):  # quiet
        pass

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None,
                   content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, (bytes, bytearray)) else json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _peer_gone(self) -> bool:
        """Whether the client has closed its end of the connection (its timeout passed)."""
        import select

        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _reset_mid_response(self, payload: dict) -> None:
        """Headers with the full Content-Length and half the body, then a TCP RST (``SO_LINGER`` 0)."""
        import struct

        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data[: len(data) // 2])
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def do_GET(self):
        owner = self.server_owner
        url = urlparse(self.path)
        if url.path.rstrip("/") in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": owner.model_name, "object": "model", "created": 0, "owned_by": "argus-latency-server"}]})
        elif url.path.rstrip("/") == "/stats":
            q = parse_qs(url.query)
            with_requests = q.get("requests", ["1"])[0] not in ("0", "false", "no")
            self._send_json(200, owner.stats().to_dict(requests=with_requests))
        elif url.path.rstrip("/") in ("", "/health", "/v1/health"):
            self._send_json(200, {"status": "ok"})
        else:
            self._send_json(404, _error_body(404, f"no route {url.path}", "invalid_request_error", "not_found"))

    def do_POST(self):
        owner = self.server_owner
        path = urlparse(self.path).path.rstrip("/")
        if path == "/stats/reset":
            self._read_body()
            owner.reset_stats()
            self._send_json(200, {"reset": True})
            return
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._read_body()
            self._send_json(404, _error_body(404, f"no route {path}", "invalid_request_error", "not_found"))
            return
        seq, epoch, record = owner._arrive()
        finished = False

        def respond(status: int, payload, usage=(0, 0), **kw) -> None:
            # the statistics are final before the client can read the answer
            nonlocal finished
            finished = True
            owner._finish(epoch, record, status, usage)
            self._send_json(status, payload, **kw)

        try:
            raw = self._read_body()
            try:
                body = json.loads(raw.decode("utf-8"))
                if not isinstance(body, dict):
                    raise ValueError("not an object")
            except (ValueError, UnicodeDecodeError) as exc:
                respond(400, _error_body(400, f"the body is not a JSON object: {exc}", "invalid_request_error", None))
                return
            record.model = body.get("model")
            record.key = request_key(body)
            fault, jitter = owner._fault(seq)
            if fault == "timeout":  # held past the client's timeout; then the normal answer, if still wanted
                owner._count(epoch, "timeouts")
                time.sleep(owner.timeout_delay_s)
                if self._peer_gone():  # the client gave up: nothing to answer (recorded as 499)
                    self.close_connection = True
                    return
                fault = None
            elif fault == "reset":
                owner._count(epoch, "resets")
                self._reset_mid_response(owner.completion(body, seq))
                return
            if fault is not None:
                record.delay_s = owner.fault_latency_s
                if owner.fault_latency_s > 0:
                    time.sleep(owner.fault_latency_s)
                if fault == 429:
                    ra = owner.retry_after_s
                    respond(429, _error_body(429, f"Rate limit reached (injected by LatencyServer); retry after {ra:g}s",
                                             "requests", "rate_limit_exceeded"),
                            headers={"Retry-After": f"{ra:g}", "retry-after-ms": str(int(float(ra) * 1000))})
                else:
                    respond(500, _error_body(500, "The server had an error (injected by LatencyServer)",
                                             "server_error", None))
                return
            delay = owner.latency_s + jitter
            record.delay_s = delay
            answer = owner.completion(body, seq)
            rest = record.arrival_s + delay - owner.now()
            if rest > 0:
                time.sleep(rest)
            usage = (answer["usage"]["prompt_tokens"], answer["usage"]["completion_tokens"])
            if body.get("stream"):
                chunk = {**answer, "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": {"role": "assistant",
                                                            "content": answer["choices"][0]["message"]["content"]},
                                      "finish_reason": "stop"}]}
                data = f"data: {json.dumps(chunk, ensure_ascii=False)}\n\ndata: [DONE]\n\n".encode("utf-8")
                respond(200, data, usage, content_type="text/event-stream")
            else:
                respond(200, answer, usage)
        finally:
            if not finished:  # the client went away, or a defect here
                owner._finish(epoch, record, 499, (0, 0))


# ============================================================================ standalone


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m tests.latency_server",
                                 description="Loopback OpenAI-compatible server with a set latency (see module doc).")
    ap.add_argument("--latency", type=float, default=2.0, help="seconds per answer (default 2.0)")
    ap.add_argument("--jitter", type=float, default=0.0, help="plus uniform [0, JITTER] seconds")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--fail-rate-429", type=float, default=0.0)
    ap.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds of a 429")
    ap.add_argument("--fail-rate-500", type=float, default=0.0)
    ap.add_argument("--fail-first-n-429", type=int, default=0)
    ap.add_argument("--fault-latency", type=float, default=0.0, help="seconds before a fault is answered")
    ap.add_argument("--fail-rate-timeout", type=float, default=0.0, help="share of requests held for --timeout-delay")
    ap.add_argument("--timeout-delay", type=float, default=30.0, help="seconds a timeout fault holds its request")
    ap.add_argument("--fail-rate-reset", type=float, default=0.0, help="share of requests reset mid-response")
    args = ap.parse_args(argv)
    server = LatencyServer(
        latency_s=args.latency, jitter_s=args.jitter, seed=args.seed, fail_rate_429=args.fail_rate_429,
        retry_after_s=args.retry_after, fail_rate_500=args.fail_rate_500, fail_first_n_429=args.fail_first_n_429,
        fault_latency_s=args.fault_latency, fail_rate_timeout=args.fail_rate_timeout,
        timeout_delay_s=args.timeout_delay, fail_rate_reset=args.fail_rate_reset, host=args.host, port=args.port,
    ).start()
    print(f"LatencyServer listening: {server.url} (latency {args.latency:g}s + jitter [0, {args.jitter:g}]s); "
          f"stats at {server.base_url}/stats; Ctrl-C stops", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        s = server.stats()
        server.stop()
        print(f"\nrequests {s.total_requests}, answered {s.answered}, 429 {s.sent_429}, 500 {s.sent_500}, "
              f"max in flight {s.max_in_flight}", flush=True)


if __name__ == "__main__":
    main()
