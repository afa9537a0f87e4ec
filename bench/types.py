"""The event-type ladder, cross-validated by complaint: which step reads more event sentences right.

Every rung is measured on the same folds as ``bench/designs.py`` (``argus.training.heads._folds``,
six groups of three complaints), each choice made inside the fold, on the sentences that state a gold
event (the type of the event whose trigger comes first):

``head``         the type head alone (its C chosen inside the fold, as ``train_event_heads`` does), the
                 most probable type with ``none`` left out, as the design reads it;
``+lexicon``     weighed with the trigger lexicon of the training complaints' gold events, for the word
                 the trigger head picks (``argus.designs.sentence.types.lexicon_type``; shipped);
``trigger model``  the trigger's type model of the ``types`` part (``argus.designs.sentence.types.TriggerTypes``:
                 the trigger's lemma and neighbours, its contextual vector, the sentence's embedding and lemmas),
                 trained in the fold on the gold events, for the same word (it types the word picked, while the
                 label here is the sentence's first gold event: docs/gold.md measures it on the events found);
``+prototypes``  the lexicon rung with the similarity of the sentence to a written definition of each type (zero-shot
                 typing by label descriptions: softmax of cosine / 0.1, weight 0.5);
with ``--finetune EPOCHS`` (torch and transformers, the dev extra), the ladder's third rung: MiniLM
fine-tuned in each fold on the training complaints' event sentences (mean pooling, a linear layer,
cross-entropy with square-root class weights, AdamW 5e-5 / 2e-3, batches of 16, seeded):
``fine-tuned``            its most probable type;
``fine-tuned +lexicon``   weighed with the trigger lexicon as ``+lexicon`` weighs the head;
``fine-tuned x head +lexicon``  the geometric mean of its distribution and the type head's, weighed with
                          the lexicon.

Printed: accuracy per rung (mean over complaints, 95 % bootstrap interval), the paired difference to
the rung it builds on (95 % paired bootstrap interval over complaints), and the most frequent confusions of
the shipped rung.

    python bench/types.py [--finetune 4]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: a written definition per type, for the prototype rung (not shipped: measured no better)
DEFINITIONS = {
    "hiring": "The employer hired the plaintiff and she began working in a new job position.",
    "promotion": "The employee was promoted to a higher position or title.",
    "demotion": "The employee was demoted to a lower position with reduced responsibilities.",
    "complaint": "The employee complained or reported discrimination, harassment or mistreatment to a supervisor or "
                 "human resources.",
    "harassment": "A coworker or supervisor made demeaning remarks, slurs, jokes, unwanted touching or sexual advances "
                  "toward the employee.",
    "discrimination": "The employer treated the employee worse than others because of race, sex, age, disability or "
                      "religion.",
    "accommodation_request": "The employee asked for an accommodation for a disability, pregnancy or religious practice.",
    "accommodation_denial": "The employer denied or refused the requested accommodation.",
    "leave": "The employee took or requested medical, FMLA, maternity or other leave from work.",
    "discipline": "The employee received a written warning, write-up, performance improvement plan or suspension.",
    "investigation": "Human resources investigated the complaint, interviewed witnesses or reviewed the conduct.",
    "termination": "The employer fired the employee and terminated her employment.",
    "resignation": "The employee resigned or quit her job.",
    "pay_decision": "The employer changed the employee's pay, salary, raise, bonus or commission.",
    "schedule_change": "The employee's shift, schedule, hours, duties or assignment was changed.",
    "communication": "Someone told, emailed, wrote, said or informed the employee something in a meeting, call or "
                     "message.",
    "medical": "The employee was diagnosed with a medical condition, injured, became pregnant or received treatment.",
    "charge_filing": "The employee filed a charge of discrimination with the EEOC or a state agency.",
    "other": "The employee worked at the company and performed her job duties.",
}


def _finetuned(docs, train: list[int], test: list[int], epochs: int, seed: int = 0) -> dict[tuple[int, int], dict]:
    """(complaint, sentence) → type → probability, for the event sentences of ``test``, by MiniLM fine-tuned on
    the event sentences of ``train`` (see the module docstring)."""
    import random

    import torch
    from transformers import AutoModel, AutoTokenizer

    from argus.models.embeddings import resolve_encoder_path
    from argus.training import heads as H

    torch.manual_seed(seed)
    rng = random.Random(seed)
    path = resolve_encoder_path("embedded")
    tok = AutoTokenizer.from_pretrained(path)
    enc = AutoModel.from_pretrained(path)

    def events(idx):
        return [(docs[i].texts[k], t, i, k) for i in idx for k, t in enumerate(docs[i].types) if t != H.NONE]

    rows = events(train)
    classes = sorted({t for _, t, _, _ in rows})
    counts = collections.Counter(t for _, t, _, _ in rows)
    weight = torch.tensor([(len(rows) / (len(classes) * counts[c])) ** 0.5 for c in classes])
    head = torch.nn.Linear(enc.config.hidden_size, len(classes))
    opt = torch.optim.AdamW([{"params": enc.parameters(), "lr": 5e-5}, {"params": head.parameters(), "lr": 2e-3}],
                            weight_decay=0.01)

    def pooled(texts):
        b = tok(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
        m = b["attention_mask"].unsqueeze(-1).float()
        return (enc(**b).last_hidden_state * m).sum(1) / m.sum(1)

    enc.train()
    for _ in range(epochs):
        rng.shuffle(rows)
        for s in range(0, len(rows), 16):
            batch = rows[s:s + 16]
            loss = torch.nn.functional.cross_entropy(head(pooled([r[0] for r in batch])),
                                                     torch.tensor([classes.index(r[1]) for r in batch]), weight=weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
    enc.eval()
    todo = events(test)
    with torch.no_grad():
        probs = torch.softmax(head(pooled([r[0] for r in todo])), -1).numpy() if todo else []
    return {(i, k): {c: float(v) for c, v in zip(classes, p)} for (_, _, i, k), p in zip(todo, probs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=6)
    ap.add_argument("--finetune", type=int, default=0, metavar="EPOCHS",
                    help="also the fine-tuned encoder's rungs, trained this many epochs in each fold (0: not)")
    args = ap.parse_args()

    from argus.designs.sentence.types import lexicon_type, trigger_types
    from argus.training import heads as H
    from argus.training.types import fit_part
    from argus.models.embeddings import encode
    from argus.experiments.stats import paired_bootstrap_ci
    from optimizers.frontier.pareto import bootstrap_ci

    t0 = time.perf_counter()
    folders = H.annotated_folders(("train", "dev"))
    docs = H.labeled_complaints(folders)
    f = H._Features.of(docs, "embedded")
    names = list(DEFINITIONS)
    proto = np.asarray(encode([DEFINITIONS[t] for t in names]), dtype="float64")
    proto /= np.linalg.norm(proto, axis=1, keepdims=True)
    rungs = ("head", "+lexicon", "trigger model", "+prototypes")
    base = {"+lexicon": "head", "trigger model": "+lexicon", "+prototypes": "+lexicon"}
    if args.finetune:
        rungs += ("fine-tuned", "fine-tuned +lexicon", "fine-tuned x head +lexicon")
        base.update({"fine-tuned": "head", "fine-tuned +lexicon": "+lexicon", "fine-tuned x head +lexicon": "+lexicon"})
    acc: dict[str, dict[str, list[bool]]] = {r: {} for r in rungs}
    confusions: collections.Counter = collections.Counter()
    for tr, te in H._folds(len(docs), args.folds, [d.doc_id for d in docs]):  # each style dealt over the folds
        c_type, c_trigger = H._choose(f, tr)
        tm = H._type_model(c_type).fit(*H._type_xy(f, tr))
        wm = H._trigger_model(c_trigger).fit(*H._trigger_xy(f, tr))
        lexicon = fit_part([folders[i] for i in tr])
        classes = list(tm.classes_)
        tuned = _finetuned(docs, tr, te, args.finetune) if args.finetune else {}
        for i in te:
            d = docs[i]
            probs = tm.predict_proba(f.type_x[i])
            emb = f.type_x[i][:, :proto.shape[1]].astype("float64")
            emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-9)
            sims = emb @ proto.T
            for k, (gold, (words, x)) in enumerate(zip(d.types, f.words[i])):
                if gold == H.NONE or not len(words):
                    continue
                p = {c: float(probs[k][j]) for j, c in enumerate(classes)}
                pick = words[int(wm.predict_proba(x)[:, 1].argmax())]
                word = pick[0]
                head = max((c for c in p if c != H.NONE), key=p.get)
                lex, _ = lexicon_type(p, word, lexicon)
                model = trigger_types(lexicon, [d.texts[k]], [pick], [p])[0][0]
                s = np.exp((sims[k] - sims[k].max()) / 0.1)
                s /= s.sum()
                weighed = {c: float(np.exp(np.log(v + 1e-9) + 0.5 * np.log(s[names.index(c)] + 1e-9)))
                           for c, v in p.items() if c != H.NONE and c in names}
                both, _ = lexicon_type(weighed, word, lexicon)
                picks = [head, lex, model, both]
                if args.finetune:
                    q = tuned[(i, k)]
                    mix = {c: (q.get(c, 0.0) * p.get(c, 0.0)) ** 0.5 for c in q}
                    picks += [max(q, key=q.get), lexicon_type(q, word, lexicon)[0], lexicon_type(mix, word, lexicon)[0]]
                for rung, pick in zip(rungs, picks):
                    acc[rung].setdefault(d.doc_id, []).append(pick == gold)
                if lex != gold:
                    confusions[(gold, lex)] += 1
    docs_ids = list(acc["head"])
    print("| rung | type accuracy on event sentences [95 % CI] | Δ vs the rung it builds on [95 % paired CI] |")
    print("|---|---|---|")
    per_rung = {}
    for rung in rungs:
        per = per_rung[rung] = [statistics.fmean(acc[rung][d]) for d in docs_ids]
        lo, hi = bootstrap_ci(per)
        delta = "–"
        if rung in base:
            dd, dlo, dhi = paired_bootstrap_ci(per, per_rung[base[rung]])
            delta = f"vs {base[rung]}: {dd:+.3f} [{dlo:+.3f}, {dhi:+.3f}]"
        pooled = sum(sum(v) for v in acc[rung].values()) / sum(len(v) for v in acc[rung].values())
        print(f"| {rung} | {statistics.fmean(per):.3f} [{lo:.3f}, {hi:.3f}] (pooled {pooled:.3f}) | {delta} |")
    print()
    print("most frequent confusions of +lexicon (gold → read):",
          ", ".join(f"{g} → {p} {n}" for (g, p), n in confusions.most_common(10)))
    print(f"{sum(len(v) for v in acc['head'].values())} event sentences of {len(docs_ids)} complaints, "
          f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
