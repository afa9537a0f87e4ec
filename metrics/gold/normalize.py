"""Names and verbs in a comparable form, so that "Ms. Torres" meets "Torres" and "fired" meets
"terminated" when graphs are matched against gold.

Entity names are normalized by ``normalize_entity_name``: casefold, punctuation to spaces, titles
``Ms. Mr. Mrs. Dr. …`` and company suffixes ``Inc. LLC Corp. …`` and a leading ``the`` dropped
unless nothing would remain.

Verbs are normalized by ``normalize_verb`` with a crude stemmer: casefold; each token loses
``-ing/-ed/-es/-s``, a doubled final consonant and a final ``e``; a few irregular forms map to
their base (told -> tell, said -> say, …). ``verbs_compatible``: equal normalized verbs, or verbs
of one of the ``VERB_GROUPS`` (the relaxed tier of event matching).
"""

from __future__ import annotations

import re

_TITLES = {"ms", "mr", "mrs", "miss", "mx", "dr", "prof", "professor", "sgt", "hon", "rev"}
_SUFFIXES = {"inc", "incorporated", "llc", "l", "c", "corp", "corporation", "co", "ltd", "lp", "llp", "pllc",
             "pc", "plc", "na"}
_PUNCT = re.compile(r"[^\w\s]+|_")


def normalize_entity_name(name: str) -> str:
    """Casefold, punctuation to spaces, titles / company suffixes / a leading 'the' dropped."""
    toks = _PUNCT.sub(" ", name.casefold()).split()
    kept = [t for t in toks if t not in _TITLES and t not in _SUFFIXES]
    if kept and kept[0] == "the" and len(kept) > 1:
        kept = kept[1:]
    return " ".join(kept if kept else toks)


_IRREGULAR = {
    "told": "tell", "said": "say", "says": "say", "made": "make", "gave": "give", "given": "give",
    "sent": "send", "wrote": "write", "written": "write", "took": "take", "taken": "take", "met": "meet",
    "left": "leave", "began": "begin", "begun": "begin", "saw": "see", "seen": "see", "went": "go",
    "gone": "go", "heard": "hear", "spoke": "speak", "spoken": "speak", "paid": "pay", "laid": "lay",
    "forgot": "forget", "got": "get", "gotten": "get", "held": "hold", "kept": "keep", "brought": "bring",
    "sought": "seek", "thought": "think", "felt": "feel", "fell": "fall", "quit": "quit", "let": "let",
    "put": "put", "cut": "cut", "set": "set", "hit": "hit", "struck": "strike", "threw": "throw",
    "became": "become", "came": "come", "ran": "run", "withheld": "withhold", "rode": "ride",
}


def _stem(tok: str) -> str:
    tok = _IRREGULAR.get(tok, tok)
    if len(tok) > 4 and (tok.endswith("ies") or tok.endswith("ied")):
        tok = tok[:-3] + "y"
    elif len(tok) > 5 and tok.endswith("ing"):
        tok = tok[:-3]
    elif len(tok) > 4 and tok.endswith("ed"):
        tok = tok[:-2]
    elif len(tok) > 4 and tok.endswith("es") and not tok.endswith("ses"):
        tok = tok[:-2]
    elif len(tok) > 3 and tok.endswith("s") and not tok.endswith("ss"):
        tok = tok[:-1]
    if len(tok) > 3 and tok[-1] == tok[-2] and tok[-1] not in "aeiouls":
        tok = tok[:-1]  # stopp -> stop, transferr -> transfer (tell/call/pass keep their pair)
    if len(tok) > 3 and tok.endswith("e"):
        tok = tok[:-1]
    return tok


def normalize_verb(verb: str) -> str:
    """Lowercase lemma-ish form: each token casefolded and crudely stemmed."""
    toks = re.sub(r"[^\w\s-]+", " ", verb.casefold()).replace("-", "").split()
    return " ".join(_stem(t) for t in toks)


# Small groups of verbs that state the same kind of occurrence (relaxed tier).
VERB_GROUPS: dict[str, tuple[str, ...]] = {
    "termination": ("fire", "terminate", "discharge", "dismiss", "let go", "lay off", "sack", "separate"),
    "communication": ("tell", "say", "inform", "state", "advise", "notify", "explain", "remark", "comment",
                      "mention", "announce", "email", "e-mail", "text", "write", "reply", "respond", "answer",
                      "call", "message"),
    "complaint": ("complain", "report", "object", "protest", "grieve", "raise concern"),
    "hiring": ("hire", "employ", "recruit", "engage", "onboard", "begin work", "start", "join", "take job"),
    "denial": ("deny", "refuse", "reject", "decline", "turn down"),
    "request": ("ask", "request", "seek", "apply", "petition"),
    "resignation": ("resign", "quit", "leave job"),
    "discipline": ("discipline", "warn", "reprimand", "suspend", "write up", "counsel", "place on pip",
                   "sanction", "issue warning"),
    "reassignment": ("transfer", "reassign", "move", "assign", "relocate", "remove"),
    "promotion": ("promote", "elevate", "advance"),
    "harassment": ("harass", "mock", "ridicule", "insult", "belittle", "touch", "grope", "use slur", "taunt"),
    "investigation": ("investigate", "review", "interview", "examine", "look into", "inquire"),
    "charge": ("file charge", "file", "charge"),
    "diagnosis": ("diagnose", "treat"),
    "approval": ("approve", "grant", "accept", "allow"),
}
_VERB_GROUP: dict[str, set[str]] = {}
for _g, _verbs in VERB_GROUPS.items():
    for _v in _verbs:
        _VERB_GROUP.setdefault(normalize_verb(_v), set()).add(_g)


def _verb_groups(nverb: str) -> set[str]:
    if not nverb:
        return set()
    groups = set(_VERB_GROUP.get(nverb, ()))
    head = nverb.split()[0]
    groups |= _VERB_GROUP.get(head, set())
    return groups


def verbs_compatible(a: str, b: str) -> bool:
    """Equal normalized verbs, or verbs of one ``VERB_GROUPS`` group (by phrase or head token)."""
    na, nb = normalize_verb(a), normalize_verb(b)
    if not na or not nb:
        return False
    return na == nb or bool(_verb_groups(na) & _verb_groups(nb))

