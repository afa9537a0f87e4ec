"""Triggers that name no event: how many events of the offline default (``argus extract``'s code path,
``argus.runs.batch.run_batch``) have a trigger that is no verb and no event noun of its sentence
(``argus.text.words.event_word``: a name, a title, a number, a determiner, a conjunction), on the 78
annotated complaints and the real opinions, with and without ``sentence.event_words``.

    python bench/triggers.py [--out out/bench-triggers] [--examples 10]

Prints, per corpus and setting: documents, events, events whose trigger names no event (and the share),
events from sentences of three words or fewer, and examples.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def bad_triggers(ekg) -> tuple[int, list[tuple[str, str]], int]:
    """(events, [(trigger, sentence)] of the events whose trigger holds no event word, events from
    sentences of three words or fewer) of one EKG."""
    from argus.text.words import event_words, word_spans

    texts = {s.id: s.text for s in ekg.sentences}
    bad, short = [], 0
    for e in ekg.graph.events:
        sent = texts.get(e.evidence[0], "") if e.evidence else ""
        at = sent.find(e.trigger)
        if at < 0 or not any(at <= x < at + len(e.trigger) for _, x, _ in event_words(sent)):
            bad.append((e.trigger, sent))
        short += len(word_spans(sent)) <= 3
    return len(ekg.graph.events), bad, short


def run(paths: list[Path], out: Path, event_words: bool) -> list:
    from argus.config import ArgusConfig
    from argus.output.export import load_ekg
    from argus.runs.batch import run_batch

    shutil.rmtree(out, ignore_errors=True)
    cfg = ArgusConfig.load(None, {"cache_dir": str(out / "cache"), "sentence.event_words": event_words})
    report = run_batch(paths, out / "ekg", cfg, method="sentence", graphml=False)
    if report.errors:
        print(f"  {len(report.errors)} failed: {[e['source'] for e in report.errors]}")
    return [load_ekg(p) for p in sorted((out / "ekg").glob("*.ekg.json"))]


def main() -> None:
    from argus.paths import complaints_dir, data_root

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("out/bench-triggers"))
    ap.add_argument("--examples", type=int, default=10)
    args = ap.parse_args()
    corpora = {
        "78 annotated complaints": [d / "complaint.txt" for split in ("train", "dev")
                                    for d in sorted(complaints_dir(split).iterdir()) if (d / "complaint.txt").exists()],
        "real opinions": sorted((data_root() / "us_real" / "opinions").glob("*.txt")),
    }
    print("| corpus | event_words | documents | events | trigger names no event | events from ≤ 3-word sentences | s |")
    print("|---|---|---|---|---|---|---|")
    examples = {}
    for name, paths in corpora.items():
        for flag in (False, True):
            t0 = time.perf_counter()
            ekgs = run(paths, args.out / f"{name.split()[1]}-{flag}", flag)
            n = short = 0
            bad: list[tuple[str, str]] = []
            for ekg in ekgs:
                k, b, s = bad_triggers(ekg)
                n, short = n + k, short + s
                bad += b
            examples[(name, flag)] = bad
            share = f"{len(bad) / n:.1%}" if n else "–"
            print(f"| {name} | {flag} | {len(ekgs)} | {n} | {len(bad)} ({share}) | {short} | "
                  f"{time.perf_counter() - t0:.0f} |", flush=True)
    for (name, flag), bad in examples.items():
        if bad and args.examples:
            print(f"\n{name}, event_words={flag}: first {min(args.examples, len(bad))} of {len(bad)}")
            for trig, sent in bad[: args.examples]:
                print(f"  {trig!r:18} {' '.join(sent.split())[:110]}")


if __name__ == "__main__":
    main()
