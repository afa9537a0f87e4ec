"""Campaign workers on a shared Optuna storage: the database URL, trial positions, re-queueing,
creating the schema once, and the campaign's finished work as files and study attributes.

See ``optimizers.scheduler`` (module docstring, "Workers") for how a campaign uses them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from argus.errors import ConfigError, InputError
from argus.io import write_json_atomic

POSITION = "argus:position"  #: trial user attribute: the campaign position (0-based) a trial runs


def content_hash(obj: Any, n: int = 12) -> str:
    """The first ``n`` hex digits of the SHA-256 of ``obj`` as sorted JSON: how finished work is named
    (a candidate's key, a trial's folder) and how configurations are compared."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:n]


def rdb_url(url: str) -> str:
    """The SQLAlchemy URL for ``url``: ``postgresql://`` (or ``postgres://``) without a driver uses
    psycopg 3 (``postgresql+psycopg://``); any other URL is used as given."""
    if "://" not in url:
        raise ConfigError(f"--storage {url!r}: an SQLAlchemy database URL is expected, e.g. postgresql://user:pw@host/db")
    scheme, rest = url.split("://", 1)
    if scheme in ("postgresql", "postgres"):
        return f"postgresql+psycopg://{rest}"
    return url


_URL_PASSWORD = re.compile(r"(://[^/\s:@]*):[^\s@]*@")  #: ``://user:password@``, the user possibly empty
_QUERY_PASSWORD = re.compile(r"([?&](?:ssl)?(?:password|pass|pwd)=)[^&#\s]*", re.IGNORECASE)  #: ``?password=…``


def redact_url(url: str) -> str:
    """``url`` with every password replaced by ``***``: the ``user:password@`` part (an empty user too) and the
    ``password``, ``sslpassword``, ``pass`` and ``pwd`` query parameters. A URL with a password is rendered
    by SQLAlchemy (keys sorted, values quoted); one without is returned as given. Any other text (an error
    message quoting a URL) has the URLs in it redacted in place."""
    if not (_URL_PASSWORD.search(url) or _QUERY_PASSWORD.search(url)):
        return url
    if "://" in url and not any(c.isspace() for c in url):
        from sqlalchemy.engine import make_url

        try:
            url = make_url(url).render_as_string(hide_password=True)
        except Exception:  # noqa: BLE001 - not an SQLAlchemy URL (e.g. a non-numeric port): the patterns below
            pass
    return _QUERY_PASSWORD.sub(r"\1***", _URL_PASSWORD.sub(r"\1:***@", url))


def read_record(path: Path, kind: type = dict):
    """A finished-work record of a campaign (``RUN/evals/…``, ``RUN/objectives.json``, …): its JSON, which must
    be a ``kind``; ``InputError`` naming the file when it cannot be read or is not what was written (the
    records are written atomically, so a damaged one was damaged afterwards)."""
    fix = "delete it and run the same command again to redo that work"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path} cannot be read as JSON ({type(exc).__name__}: {exc}); {fix}") from exc
    if not isinstance(data, kind):
        raise InputError(f"{path} holds a JSON {type(data).__name__}, not the {'list' if kind is list else 'object'} "
                         f"a campaign writes there; {fix}")
    return data


def trial_position(trial) -> int | None:
    pos = trial.user_attrs.get(POSITION)
    return int(pos) if pos is not None else None


def requeue_trial(study, trial) -> None:
    """Queue a failed trial's position again, with the settings it ran (Optuna's heartbeat callback too)."""
    pos = trial_position(trial)
    if pos is None:
        return  # not a campaign position (a trial of an older run)
    params = trial.system_attrs.get("fixed_params") or trial.params
    study.enqueue_trial(dict(params), user_attrs={POSITION: pos, "argus:retry_of": trial.number}, skip_if_exists=False)


SCHEMA_LOCK = 727372616  #: advisory lock: creating Optuna's tables
TRACKING_LOCK = 727372617  #: advisory lock: finding or creating the campaign's MLflow parent run


def schema_lock(url: str):
    """Workers starting together on an empty PostgreSQL database create Optuna's tables one at a time (a
    session-level advisory lock); other databases rely on ``schema_race`` retries."""
    return advisory_lock(url, SCHEMA_LOCK)


@contextlib.contextmanager
def advisory_lock(url: str, key: int):
    """Hold PostgreSQL's session-level advisory lock ``key`` for the block, so that workers do one thing one
    at a time; on other databases no lock is taken."""
    if not url.startswith("postgresql"):
        yield
        return
    import sqlalchemy
    from sqlalchemy.pool import NullPool

    engine = sqlalchemy.create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:key)"), {"key": key})
            try:
                yield
            finally:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:key)"), {"key": key})
    finally:
        engine.dispose()


def schema_race(exc: BaseException) -> bool:
    """An error of two processes creating the same tables at once (worth a retry)."""
    from sqlalchemy import exc as sa_exc

    while exc is not None:
        if isinstance(exc, (sa_exc.IntegrityError, sa_exc.ProgrammingError, sa_exc.OperationalError)):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists
        return True
    return True


class Artifacts:
    """Finished work of a campaign by name (``evals/val-<key>.json``, ``evals/test-<key>.json``,
    ``trials/<hash>/gepa_candidates.json``, ``trials/<hash>/aux-<prog>.json``, ``objectives.json``,
    ``spend/<worker>.json``): files under RUN and, with an RDB storage, the study's user attributes
    ``argus:<name>`` — the copy every worker reads (the files are then this worker's cache)."""

    PREFIX = "argus:"

    def __init__(self, run_dir: Path, study=None):
        self.run_dir = run_dir
        self.study = study
        self._shared: dict[str, Any] = {}

    def refresh(self) -> dict[str, Any]:
        if self.study is not None:
            attrs = self.study._storage.get_study_user_attrs(self.study._study_id)
            self._shared = {k[len(self.PREFIX):]: v for k, v in attrs.items() if k.startswith(self.PREFIX)}
        return self._shared

    def _rows(self, *, key: str | None = None, prefix: str | None = None) -> list | None:
        """(key, value_json) rows of this study's attributes with ``key`` or a key starting with ``prefix``,
        read with one query (not the whole set: a campaign's evaluations add up to megabytes); None when
        the storage is not a plain RDB schema."""
        engine = getattr(self.study._storage, "engine", None)
        if engine is None:
            return None
        import sqlalchemy

        t = sqlalchemy.table("study_user_attributes", sqlalchemy.column("study_id"), sqlalchemy.column("key"),
                             sqlalchemy.column("value_json"))
        cond = t.c.key == key if key is not None else t.c.key.startswith(prefix, autoescape=True)
        try:
            with engine.connect() as conn:
                return list(conn.execute(sqlalchemy.select(t.c.key, t.c.value_json).where(
                    t.c.study_id == self.study._study_id, cond)))
        except Exception:  # noqa: BLE001 - another schema: the caller reads them all
            return None

    def _lookup(self, name: str) -> bool:
        """Read one attribute from the storage into the local copy; whether it exists."""
        rows = self._rows(key=self.PREFIX + name)
        if rows is None:
            return name in self.refresh()
        for _, value in rows:
            self._shared[name] = json.loads(value)
        return bool(rows)

    def items(self, prefix: str) -> dict[str, Any]:
        """Every shared attribute whose name starts with ``prefix``, as it is in the storage now."""
        rows = self._rows(prefix=self.PREFIX + prefix)
        if rows is None:
            return {k: v for k, v in self.refresh().items() if k.startswith(prefix)}
        found = {k[len(self.PREFIX):]: json.loads(v) for k, v in rows}
        self._shared.update(found)
        return found

    def get(self, name: str):
        """The shared copy (with a storage), else the file, else None."""
        if self.study is not None and (name in self._shared or self._lookup(name)):
            return self._shared[name]
        path = self.run_dir / name
        return read_record(path, list if name.endswith("gepa_candidates.json") else dict) if path.exists() else None

    def put(self, name: str, data, *, share: bool = True, replace: bool = False) -> None:
        write_json_atomic(self.run_dir / name, data, indent=1)
        if share:
            self.share(name, data, replace=replace)

    def share(self, name: str, data, *, replace: bool = False) -> None:
        """Into the storage (no-op without one); the first writer wins unless ``replace``."""
        if self.study is None:
            return
        if not replace and (name in self._shared or self._lookup(name)):
            return
        self.study._storage.set_study_user_attr(self.study._study_id, self.PREFIX + name, data)
        self._shared[name] = data

    def names(self, prefix: str) -> list[str]:
        if self.study is not None:
            return sorted(self.items(prefix))
        folder, _, stem = prefix.rpartition("/")
        base = self.run_dir / folder
        return sorted(f"{folder}/{p.name}" if folder else p.name for p in base.glob(f"{stem}*.json")) if base.is_dir() else []
