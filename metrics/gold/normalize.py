"""Names and verbs in a comparable form, so that "Ms. Torres" meets "Torres" and "fired" meets
"terminated" when graphs are matched against gold.

Entity names are normalized by ``normalize_entity_name``: casefold, punctuation to spaces, titles
``Ms. Mr. Mrs. Dr. …`` and company suffixes ``Inc. LLC Corp. …`` and a leading ``the`` dropped
unless nothing would remain.

Verbs are normalized by ``normalize_verb`` to their lemma, each token by the project's lemminflect
wrapper (``argus.text.words.lemma``): told -> tell, sued -> sue, withdrew -> withdraw, terminated ->
terminate. ``verbs_compatible``: equal normalized verbs, or verbs
of one of the ``VERB_GROUPS`` (the relaxed tier of event matching).
"""

from __future__ import annotations

import re
from functools import lru_cache

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


@lru_cache(maxsize=50000)
def _lemma(tok: str) -> str:
    """The verb lemma of one casefolded token (``argus.text.words.lemma``, lemminflect: "sued" → "sue",
    "withdrew" → "withdraw", "hired" → "hire"; a token that is itself one of its lemmas stays); a plural noun's singular where the token has no verb
    reading ("complaints" → "complaint"); lemminflect's rules for unknown words that look inflected;
    else the token itself."""
    from argus.text.words import lemma, readings

    found = readings(tok)
    if "VERB" in found:
        # a base form stays itself: "lay" (off) is not "lie", "found" (a company) not "find"
        return tok if tok in found["VERB"] else lemma(tok)
    if "NOUN" in found:
        return found["NOUN"][0]
    if not found and len(tok) > 4 and tok.endswith(("ed", "ing", "es")):
        import lemminflect

        oov = lemminflect.getAllLemmasOOV(tok, upos="VERB").get("VERB")
        if oov:
            return oov[0]
    return tok


def normalize_verb(verb: str) -> str:
    """Each token casefolded and lemmatized (``_lemma``), hyphens dropped ("e-mailed" → "email")."""
    toks = re.sub(r"[^\w\s-]+", " ", verb.casefold()).replace("-", "").split()
    return " ".join(_lemma(t) for t in toks)


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

