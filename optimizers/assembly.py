"""The frontier of a campaign, assembled from its deployment runs: what ``argus extract --frontier`` and
the reports read.

A :class:`FrontierAssembly` turns every finished validation evaluation (of every worker, with an RDB
storage) into a member manifest (objectives, per-split scores with confidence intervals, lineage,
settings, prompts, costs, dataset and metric hashes), builds the frontier with
``optimizers.frontier.build_frontier_file``, deploys its members on the test documents when not done
yet, and writes ``COMPILED/<campaign>/``: ``frontier.json`` (with the campaign's optimization spend),
each candidate's ``manifest.json`` and ``programs.json`` (members and the rest: a repricing may promote
any), and ``RUN/hypervolume.json``. Workers sharing a compiled folder write it in turn
(``COMPILED/<campaign>/.frontier.lock``).

The objectives are fixed once per campaign (``RUN/objectives.json``, and the storage): the cost unit
and, once the first trial is complete, the hypervolume reference.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Callable

from argus.config import LMSpec
from argus.io import write_json_atomic
from argus.models.ledger import CostLedger
from optimizers.budget import SpendBook, StopConditions
from optimizers.config import CampaignConfig
from optimizers.evaluation import CandidateEval
from optimizers.search import aux_name, aux_programs
from optimizers.storage import Artifacts, content_hash


def model_name(model: str | dict | None) -> str:
    """The model string of a model given as a string or as an LM spec mapping ("" for None)."""
    if model is None:
        return ""
    return model if isinstance(model, str) else str(model.get("model", ""))


class FrontierAssembly:
    """Deployment results → members, programs, manifests and the frontier file of one campaign.

    From the campaign: ``evaluate`` (a candidate's deployment runs on a split, reused when finished) and
    ``quality`` (the document quality for a judge model or None) deploy members on the test documents;
    ``status`` records the phase; ``spend_summary`` gives the campaign's optimization spend for a book;
    ``first_trial_done`` says whether the first trial position is complete (the hypervolume reference is
    fixed from it); ``estimate`` is the campaign's estimate, recorded with the spend; ``search`` states the
    outer search (``Scheduler.search_summary``: the sampler and its random draws). ``rdb``: several
    workers share the run (and take turns writing the compiled folder).
    """

    def __init__(self, config: CampaignConfig, run_dir: Path, compiled_dir: Path, art: Artifacts, *, rdb: bool,
                 evaluate: Callable[..., CandidateEval], quality: Callable[[str | None], Any],
                 status: Callable[..., None], spend_summary: Callable[[SpendBook], dict],
                 first_trial_done: Callable[[], bool], estimate: dict, search: Callable[[], dict] | None = None):
        self.config = config
        self.run_dir = run_dir
        self.compiled_dir = compiled_dir
        self.art = art
        self.rdb = rdb
        self.evaluate = evaluate
        self.quality = quality
        self.status = status
        self.spend_summary = spend_summary
        self.first_trial_done = first_trial_done
        self.search = search
        self.estimate = estimate
        #: what the last frontier written holds: (validation, test evaluation) of each member, the
        #: hypervolume history (``optimizers.tracking`` logs them), and the default candidate ({key, its validation
        #: figures, on_frontier}; None without one)
        self.written: tuple[list[tuple[CandidateEval, CandidateEval | None]], list, dict | None] = ([], [], None)

    # -------------------------------------------------------------- objectives fixed once
    def objective(self) -> dict:
        """Cost unit (``cost_usd`` when a model of the search space has a price, else ``tokens``),
        fixed at the first run and stored in ``RUN/objectives.json`` (and the storage) with the
        hypervolume reference."""
        obj = self.art.get("objectives.json")
        if obj is not None:
            return obj
        declared = self.config.objectives
        if declared:
            obj = {"cost_key": "cost_usd" if "usd" in declared else "tokens", "reference": None,
                   "seconds": "seconds" in declared, "why": f"the campaign declares objectives {declared}"}
            self.art.put("objectives.json", obj)
            return self.art.get("objectives.json")
        models = list(self.config.space.task_model) + list(self.config.space.stage2_model or [])
        paid = any(_model_price(self.config.lm_spec(m)) > 0 for m in models)
        obj = {"cost_key": "cost_usd" if paid else "tokens", "reference": None,
               "why": "a model of the search space has a price" if paid else "every model of the search space is free"}
        self.art.put("objectives.json", obj)
        return self.art.get("objectives.json")

    def _fix_reference(self, obj: dict, evals: list[CandidateEval]) -> dict:
        """The hypervolume reference: quality 0 and twice the largest cost of the first trial (position 1,
        whichever worker ran it; called once it is complete; ``max_cost_per_doc`` when the cost is in USD
        and it is set). Points beyond it add nothing."""
        if obj.get("reference") is not None:
            return obj
        first = [e for e in evals if e.trial == 1]
        if not first:
            return obj
        key = obj["cost_key"]
        bound = self.config.budget.max_cost_per_doc if key == "cost_usd" else None
        top = max(getattr(e, key) for e in first)
        obj = {**obj, "reference": {"quality": 0.0, key: float(bound if bound is not None else (2 * top if top > 0 else 1.0))}}
        if obj.get("seconds"):
            slowest = max(e.latency_s for e in first)
            obj["reference"]["latency_s"] = float(2 * slowest if slowest > 0 else 1.0)
        self.art.put("objectives.json", obj, replace=True)  # every worker computes the same from position 1
        return obj

    # -------------------------------------------------------------- the frontier
    def evaluations(self, split: str) -> list[CandidateEval]:
        """Every finished evaluation on a split: this run's files, or with an RDB storage every worker's."""
        return [CandidateEval.from_dict(self.art.get(n)) for n in self.art.names(f"evals/{split}-")]

    def update(self, splits, ledger: CostLedger, spend: SpendBook, stop: StopConditions, *, iteration: int,
               wait: bool = True) -> None:
        """Build and write the frontier from every finished evaluation (with an RDB storage: every worker's),
        deploying members on the test documents first when not done yet. Workers sharing a compiled folder
        take turns (a lock file); after a trial (``wait`` False) a worker skips the update while another
        writes — the later update reads the storage after it, so the last one written has everything."""
        with self._lock(wait) as mine:
            if mine:
                self._write(splits, ledger, spend, stop, iteration=iteration)

    @contextlib.contextmanager
    def _lock(self, wait: bool):
        if not self.rdb:
            yield True
            return
        from filelock import FileLock, Timeout

        self.compiled_dir.mkdir(parents=True, exist_ok=True)
        lock = FileLock(self.compiled_dir / ".frontier.lock")
        try:
            lock.acquire(timeout=-1 if wait else 0)
        except Timeout:
            yield False
            return
        try:
            yield True
        finally:
            lock.release()

    def _write(self, splits, ledger: CostLedger, spend: SpendBook, stop: StopConditions, *, iteration: int) -> None:
        from optimizers.examples import examples_hash
        from optimizers.frontier import (
            Constraints,
            Lineage,
            MemberManifest,
            build_frontier_file,
            dependency_versions,
            flag_val_only_wins,
            instruction_diff_size,
            write_frontier,
            write_member,
        )

        evals = [e for e in self.evaluations("val") if e.trial >= 1 or e.default]
        if not evals:
            return
        obj = self.objective()
        if self.first_trial_done():
            # the reference is fixed from the first trial once it is complete, never from a cut-short one or
            # from the part of it another worker has shared so far
            obj = self._fix_reference(obj, evals)
        cost_key = obj["cost_key"]
        senses = {"quality": "max", cost_key: "min", **({"latency_s": "min"} if obj.get("seconds") else {})}
        by_key = {e.key: e for e in evals}
        data_hash = content_hash({name: examples_hash(ex) for name, ex in splits.items()})
        metric_hash = content_hash(self.config.metric.model_dump())
        aux = {e.key: self._aux_for(e.settings) for e in evals}
        versions = dependency_versions()
        refs = {ex.doc_id: ex.ref for ex in splits["val"] + splits["test"]}

        def manifest(ev: CandidateEval, test: CandidateEval | None) -> MemberManifest:
            parent = by_key.get(ev.parent_key) if ev.parent_key else None
            diff = sum(instruction_diff_size(parent.instructions.get(k, ""), v) for k, v in ev.instructions.items()) if parent else 0
            split_scores = {"val": _split_scores(ev)}
            documents = {"val": [refs.get(d, d) for d in ev.doc_ids]}
            if test is not None:
                split_scores["test"] = _split_scores(test)
                documents["test"] = [refs.get(d, d) for d in test.doc_ids]
            return MemberManifest(
                campaign=self.config.name, member_id=ev.key,
                objectives={"quality": ev.quality, "cost_usd": ev.cost_usd, "tokens": ev.tokens, "latency_s": ev.latency_s},
                splits=split_scores,
                lineage=Lineage(parent=ev.parent_key, changed_programs=ev.changed_programs, instruction_diff_chars=diff,
                                iteration=max(0, ev.trial),
                                origin="default" if ev.default else "seed" if ev.parent_key is None else "gepa"),
                default=ev.default,
                settings=self._member_settings(ev, aux[ev.key]),
                prompts=ev.instructions, stage_costs=ev.stage_costs, model_tokens=ev.model_tokens, documents=documents,
                dataset_hash=data_hash, metric_hash=metric_hash, versions=versions,
            )

        candidates = [manifest(e, None) for e in evals]
        constraints = Constraints(max_cost_per_doc=self.config.budget.max_cost_per_doc)
        reference = obj.get("reference")
        ff = build_frontier_file(self.config.name, candidates, senses, constraints, reference=reference)
        members, written = [], []
        for member_id in ff.members:
            ev = by_key[member_id]
            test = self._test_of(ev)
            if test is None and not stop.check():
                self.status(trial=iteration, phase="finalize", member=ev.key)
                start = spend.position()
                test = self.evaluate(ev.key, "test", ev.settings, ev.instructions, splits["test"],
                                     self.quality(ev.settings.get("judge_model")), ledger)
                spend.record(iteration, "test", start)
            members.append(manifest(ev, test))
            written.append((ev, test))
        members = flag_val_only_wins(members, senses, constraints)
        self.compiled_dir.mkdir(parents=True, exist_ok=True)
        # every candidate's folder, not only the members': a repricing (argus frontier reprice) may promote any
        on = {m.member_id for m in members}
        others = [manifest(ev, self._test_of(ev)) for ev in evals if ev.key not in on]
        for m in members + others:
            self._write_programs(self.compiled_dir / m.member_id, by_key[m.member_id])
            write_member(self.compiled_dir, m)
        ff = ff.model_copy(update={"optimization_spend": {**self.spend_summary(spend), "estimate": self.estimate},
                                   "reference": reference or ff.reference,
                                   "search": self.search() if self.search is not None else {}})
        write_frontier(self.compiled_dir, ff)
        write_json_atomic(self.run_dir / "hypervolume.json", [h.model_dump() for h in ff.hypervolume_history], indent=1)
        default = next(({"key": e.key, "quality": e.quality, "cost_usd": e.cost_usd, "tokens": e.tokens,
                         "latency_s": e.latency_s, "on_frontier": e.key in on} for e in evals if e.default), None)
        self.written = (written, list(ff.hypervolume_history), default)

    # -------------------------------------------------------------- a member
    def _test_of(self, ev: CandidateEval) -> CandidateEval | None:
        """The candidate's finished deployment runs on the test documents, if any."""
        found = self.art.get(f"evals/test-{ev.key}.json")
        return CandidateEval.from_dict(found) if found is not None else None

    def _aux_for(self, settings: dict) -> list[dict]:
        out = []
        for prog in aux_programs(self.config):
            record = self.art.get(aux_name(settings, prog))
            if record is not None:
                out.append(record)
        return out

    def _member_settings(self, ev: CandidateEval, aux: list[dict]) -> dict:
        from optimizers.deploy import member_models

        models = dict(member_models(ev.settings))
        models["reflection"] = ev.settings.get("reflection_model") or model_name(self.config.models.reflection)
        if self.config.metric.weights.get("judge", 0.0) > 0:
            models["judge"] = ev.settings.get("judge_model") or model_name(self.config.models.judge)
        out = {**ev.settings, "models": models, "metric": self.config.metric.model_dump()}
        if aux:
            out["aux_quality"] = {a["program"]: {sp: a[sp]["quality"] for sp in ("val", "test")} for a in aux}
        return out

    def _write_programs(self, member_dir: Path, ev: CandidateEval) -> None:
        """The member's programs as ``programs.ArgusPrograms`` JSON state (pickle-free, scrubbed)."""
        from optimizers.deploy import programs_with
        from optimizers.frontier import scrub_secrets

        member_dir.mkdir(parents=True, exist_ok=True)
        progs = programs_with(ev.instructions, ev.settings.get("max_retries", 1))
        tmp = member_dir / "programs.tmp.json"
        progs.save(str(tmp))
        text = tmp.read_text(encoding="utf-8")
        tmp.unlink()
        write_json_atomic(member_dir / "programs.json", scrub_secrets(json.loads(text)), indent=1)


def _model_price(spec: LMSpec) -> float:
    """USD for a million input plus a million output tokens of a model (0 when free or unknown)."""
    if spec.price_per_mtok is not None:
        return float(sum(spec.price_per_mtok))
    if spec.model.startswith("local/"):
        return 0.0
    try:
        import litellm

        pin, pout = litellm.cost_per_token(model=spec.model, prompt_tokens=1_000_000, completion_tokens=1_000_000)
        return float(pin + pout)
    except Exception:
        return 0.0


def _split_scores(ev: CandidateEval):
    from optimizers.frontier import SplitScores, bootstrap_ci

    docs = ev.per_document

    def ci(key):
        vals = [float(d[key]) for d in docs.values()]
        return bootstrap_ci(vals) if len(vals) >= 2 else None

    return SplitScores(
        n=ev.n_docs, quality=ev.quality, quality_ci=ci("quality"), cost_usd=ev.cost_usd, cost_usd_ci=ci("cost_usd"),
        tokens=ev.tokens, tokens_ci=ci("tokens"), latency_s=ev.latency_s, per_example=ev.per_example,
        doc_ids=ev.doc_ids, per_document=docs, per_document_tokens=ev.per_document_tokens,
        machine=ev.machine or None, num_threads=ev.num_threads if ev.machine else None,
    )
