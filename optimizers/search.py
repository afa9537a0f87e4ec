"""One trial of a campaign: its GEPA searches and the deployment runs of what they found.

For the settings the scheduler gave it (``optimizers.scheduler``), a :class:`TrialSearch` evolves the
auxiliary programs listed in the campaign (fact fallback, chunker, resolver, QA) on their own
gold-derived examples and metrics, then ``dspy.GEPA`` evolves the programs the trial's extraction
design runs inside ``argus.pipeline.ArgusPipeline``, and every candidate GEPA kept is deployed on the
validation documents, with its lineage (parent, changed programs). What is finished is stored as it
finishes (``optimizers.storage.Artifacts``) and reused by a resumed run or another worker; a search
that a stop cut short is not kept.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

import dspy

from argus.models.concurrency import watching_outages
from argus.config import LMSpec
from argus.io import append_jsonl_line
from argus.models.ledger import CostLedger, ledger_context
from optimizers.budget import SpendBook, StopConditions
from optimizers.config import AUX_PROGRAMS, CampaignConfig
from optimizers.evaluation import CandidateEval, evaluate_examples
from optimizers.proposer import TextInstructionProposer
from optimizers.storage import Artifacts, content_hash

EVOLVABLE = {"stage1": "programs.stage1.extract.predict", "stage2": "programs.stage2.relate.predict",
             "sentence_events": "programs.sentence_events.choose.predict",
             "pair_relations": "programs.pair_relations.choose.predict"}
#: the evolvable programs each extraction design runs (a trial evolves only what its design calls)
DESIGN_PROGRAMS = {"chunked": ("stage1", "stage2"), "sentence": ("sentence_events", "stage2", "pair_relations")}


class ProviderOutage(RuntimeError):
    """A deployment run's or a GEPA search's model could not be reached (calls failed through their retries):
    what it scored says nothing about the candidates, so it is not kept, and the campaign stops, resumable."""


def _search_outage(what: str, outages: list[BaseException]) -> ProviderOutage:
    first = outages[0]
    return ProviderOutage(
        f"{what} could not reach its model: {len(outages)} call(s) failed through their retries (first: "
        f"{type(first).__name__}: {str(first)[:300]}); its candidates are not kept: run the same command again to "
        "resume once the model answers")


def aux_programs(config: CampaignConfig) -> list[str]:
    """The auxiliary programs the campaign evolves, in the order of its ``programs``."""
    return [p for p in config.programs if p in AUX_PROGRAMS]


def design_programs(config: CampaignConfig, design: str) -> list[str]:
    """The campaign's evolvable programs that the extraction ``design`` runs."""
    return [p for p in config.programs if p in EVOLVABLE and p in DESIGN_PROGRAMS[design]]


def aux_name(settings: dict, prog: str) -> str:
    """The name of a trial's record of an auxiliary program (its best instructions and their scores)."""
    return f"trials/{content_hash(settings)}/aux-{prog}.json"


def reflection_fallback(run_dir: Path, worker: str, iteration: int) -> Callable[[str, str], None]:
    """A callback that records a reflection that kept its parent's instruction in ``RUN/campaign.log.jsonl``."""
    from optimizers.frontier import utc_now

    def record(component: str, reason: str) -> None:
        append_jsonl_line(run_dir / "campaign.log.jsonl", json.dumps({
            "time": utc_now(), "worker": worker, "trial": iteration, "event": "reflection_fallback",
            "component": component, "reason": reason}, ensure_ascii=False))
    return record


class _Evolvable:
    """GEPA component selector: round robin over the components the campaign evolves (the pipeline's
    other predictors keep their instructions)."""

    def __init__(self, names: list[str]):
        self.names = names
        self._next: dict[int, int] = {}

    def __call__(self, state, trajectories, subsample_scores, candidate_idx: int, candidate: dict[str, str]) -> list[str]:
        names = [n for n in self.names if n in candidate]
        k = self._next.get(candidate_idx, 0)
        self._next[candidate_idx] = k + 1
        return [names[k % len(names)]]


class TrialSearch:
    """The searches of a campaign's trials, one trial per :meth:`run`.

    What it builds and measures with comes from the campaign: ``lm`` (an LM for a spec), ``pipeline``
    (the pipeline a candidate deploys, for settings and instructions), ``chunk_metric`` and ``quality``
    (GEPA's metric and the deployment runs' document quality, for a judge model or None),
    ``evaluate`` (a candidate's deployment runs on a split, reused when finished) and ``status``
    (records the trial and phase). ``rdb``: several workers share the run, so GEPA's logs are per worker.
    """

    def __init__(self, config: CampaignConfig, run_dir: Path, art: Artifacts, *, worker: str, rdb: bool,
                 num_threads: int, lm: Callable[[LMSpec], Any], pipeline: Callable[..., Any],
                 chunk_metric: Callable[[str | None], Any], quality: Callable[[str | None], Any],
                 evaluate: Callable[..., CandidateEval], status: Callable[..., None]):
        self.config = config
        self.run_dir = run_dir
        self.art = art
        self.worker = worker
        self.rdb = rdb
        self.num_threads = num_threads
        self.lm = lm
        self.pipeline = pipeline
        self.chunk_metric = chunk_metric
        self.quality = quality
        self.evaluate = evaluate
        self.status = status

    def evolvable(self, settings: dict) -> list[str]:
        """Predictor names GEPA evolves: the campaign's programs that the trial's design runs (Stage 2 and
        the pair-choice program only where that design runs them)."""
        design = settings.get("extraction") or "chunked"
        names = design_programs(self.config, design)
        if design == "sentence" and "stage2" in names and settings.get("task_model") \
                and not self.pipeline(settings).sentence_stage2:
            names.remove("stage2")
        if design == "sentence" and "pair_relations" in names and settings.get("task_model") \
                and self.pipeline(settings).pair_routing()[0] != "model":
            names.remove("pair_relations")
        return [EVOLVABLE[p] for p in names]

    def run(self, iteration: int, settings: dict, splits, ledger: CostLedger, spend: SpendBook,
            stop: StopConditions) -> list[CandidateEval]:
        """Trial ``iteration`` (1-based) with ``settings``: every candidate deployed on the validation
        documents, the seed first; [] when a stop cut it short."""
        trial_dir = self.run_dir / "trials" / content_hash(settings)
        trial_dir.mkdir(parents=True, exist_ok=True)
        reflection_lm = self._reflection_lm(settings.get("reflection_model"))
        aux: dict[str, str] = {}
        for prog in aux_programs(self.config):
            if stop.check():
                return []
            self.status(trial=iteration, phase=f"aux:{prog}", settings=settings)
            start = spend.position()
            record = self._run_aux(iteration, prog, settings, splits, reflection_lm, ledger, stop)
            spend.record(iteration, f"aux:{prog}", start)
            if record is None:
                return []
            aux.update(record["instructions"])
        if stop.check():
            return []
        self.status(trial=iteration, phase="gepa", settings=settings)
        start = spend.position()
        candidates = self._gepa(trial_dir, iteration, settings, aux, splits, reflection_lm, ledger, stop)
        spend.record(iteration, "gepa", start)
        if candidates is None:
            return []
        evals: list[CandidateEval] = []
        keys: list[str] = []
        quality = self.quality(settings.get("judge_model"))
        for i, (full, parent) in enumerate(candidates):
            key = content_hash({"settings": settings, "instructions": full})
            keys.append(key)
            if stop.check():
                return []
            self.status(trial=iteration, phase="val", candidate=i, of=len(candidates), settings=settings)
            start = spend.position()
            ev = self.evaluate(key, "val", settings, full, splits["val"], quality, ledger)
            spend.record(iteration, "val", start)
            if ev.trial < 1:  # lineage recorded once; a resumed run (or a repeated candidate) finds it as it was
                ev.trial, ev.gepa_index = iteration, i
                if parent is not None and parent < len(keys):
                    ev.parent_key = keys[parent]
                    parent_instr = candidates[parent][0]
                    ev.changed_programs = sorted({k.split(".")[0] for k in full if full[k] != parent_instr.get(k)})
                self.art.put(f"evals/val-{key}.json", ev.to_dict())
            else:  # finished earlier (perhaps by a worker killed before it shared it)
                self.art.share(f"evals/val-{key}.json", ev.to_dict())
            evals.append(ev)
        return evals

    def _reflection_lm(self, model: str | None = None):
        # the reflection model answers in plain text (TextInstructionProposer); max_tokens bounds it
        return self.lm(self.config.lm_spec(model or self.config.models.reflection, max_tokens=900))

    def _gepa(self, trial_dir: Path, iteration: int, settings: dict, aux: dict, splits, reflection_lm, ledger, stop):
        """GEPA on the trial's pipeline; [(instructions of every predictor, parent index)] or None when
        stopped; the first candidate is the seed (the aux programs' best included). A search
        that did not finish is started afresh on resume (its answers come from the cache)."""
        from optimizers.examples import instructions_of

        name = f"trials/{trial_dir.name}/gepa_candidates.json"
        found = self.art.get(name)
        if found is not None:
            self.art.share(name, found)
            return [(c["instructions"], c["parent"]) for c in found]
        student = self.pipeline(settings, aux)
        candidates: list[tuple[dict[str, str], int | None]] = [(instructions_of(student), None)]
        evolvable = self.evolvable(settings)
        if evolvable:
            log_dir = trial_dir / (f"gepa.{self.worker}" if self.rdb else "gepa")
            shutil.rmtree(log_dir, ignore_errors=True)  # a cut-short search is never continued as if it were final
            gepa = dspy.GEPA(
                metric=self.chunk_metric(settings.get("judge_model")),
                instruction_proposer=TextInstructionProposer(
                    reflection_lm, on_fallback=reflection_fallback(self.run_dir, self.worker, iteration)),
                max_metric_calls=self.config.budget.max_metric_calls,
                reflection_lm=reflection_lm,
                reflection_minibatch_size=self.config.reflection_minibatch_size,
                candidate_selection_strategy="pareto",
                component_selector=_Evolvable(evolvable),
                track_stats=True,
                log_dir=str(log_dir),
                seed=self.config.seed,
                num_threads=self.num_threads,
                use_merge=False,
                gepa_kwargs={"stop_callbacks": [stop]},
            )
            with watching_outages() as outages, \
                    ledger_context(ledger, doc_id=f"trial{iteration}", stage="optimize", program="gepa"):
                compiled = gepa.compile(student, trainset=splits["train"])
            if stop.check():
                return None  # GEPA was cut short: its candidates are not final, nothing is saved as if they were
            if outages:  # its metric scored failed calls 0 and its reflections kept their parents: not a search
                raise _search_outage(f"trial {iteration}'s GEPA search", outages)
            details = getattr(compiled, "detailed_results", None)
            if details is not None:
                candidates = []
                for i, cand in enumerate(details.candidates):
                    parents = details.parents[i] if i < len(details.parents) else None
                    parent = next((p for p in (parents or []) if p is not None), None)
                    candidates.append((instructions_of(cand), parent))
        self.art.put(name, [{"instructions": c, "parent": p} for c, p in candidates])
        return candidates

    def _aux_program(self, prog: str, settings: dict, instructions: dict[str, str] | None = None):
        from optimizers.examples import AuxProgram, apply_instructions

        module = AuxProgram(prog, max_retries=settings["max_retries"])
        lm = self.pipeline(settings).lm(prog)  # the model and budget the deployed pipeline gives this stage
        for _, pred in module.named_predictors():
            pred.lm = lm
        if instructions:
            apply_instructions(module, instructions)
        return module

    def _run_aux(self, iteration: int, prog: str, settings: dict, splits, reflection_lm, ledger, stop) -> dict | None:
        """GEPA on one auxiliary program; its best candidate scored on its own val and test examples."""
        from metrics.gepa import chunker_metric, fact_fallback_metric, qa_metric, resolver_metric
        from optimizers.examples import instructions_of

        name = aux_name(settings, prog)
        found = self.art.get(name)
        if found is not None:
            self.art.share(name, found)
            return found
        metric = {"fact_fallback": fact_fallback_metric, "chunker": chunker_metric, "resolver": resolver_metric,
                  "qa": qa_metric}[prog]
        module = self._aux_program(prog, settings)
        seed = instructions_of(module)
        best = seed
        log_dir = (self.run_dir / name).parent / (f"gepa-{prog}.{self.worker}" if self.rdb else f"gepa-{prog}")
        shutil.rmtree(log_dir, ignore_errors=True)
        gepa = dspy.GEPA(metric=metric, instruction_proposer=TextInstructionProposer(
            reflection_lm, on_fallback=reflection_fallback(self.run_dir, self.worker, iteration)),
                         max_metric_calls=self.config.budget.max_metric_calls, reflection_lm=reflection_lm,
                         reflection_minibatch_size=self.config.reflection_minibatch_size, track_stats=True,
                         log_dir=str(log_dir), seed=self.config.seed, num_threads=self.num_threads,
                         use_merge=False, gepa_kwargs={"stop_callbacks": [stop]})
        with watching_outages() as outages, \
                ledger_context(ledger, doc_id=f"trial{iteration}", stage="optimize", program=f"gepa:{prog}"):
            compiled = gepa.compile(module, trainset=splits[f"{prog}:train"], valset=splits[f"{prog}:val"])
        if stop.check():
            return None  # not finished: redone on resume
        if outages:
            raise _search_outage(f"trial {iteration}'s GEPA search of {prog}", outages)
        details = getattr(compiled, "detailed_results", None)
        if details is not None and details.candidates:
            best = instructions_of(details.candidates[details.best_idx])
        record = {"program": prog, "instructions": best, "seed_instructions": seed}
        for split in ("val", "test"):
            res = evaluate_examples(self._aux_program(prog, settings, best), splits[f"{prog}:{split}"], metric, ledger,
                                    label=f"eval-{prog}-{split}", num_threads=self.num_threads)
            record[split] = res
        self.art.put(name, record)
        return record
