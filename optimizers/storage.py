"""Campaign workers on a shared Optuna storage: the database URL, trial positions, re-queueing,
creating the schema once, and the campaign's finished work as files and rows of the project's own table
``argus_artifacts`` (first writer wins: an insert that does nothing on conflict).

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
DRAW = "argus:draw"  #: trial user attribute of a position the sampler drew: "random" or "model"


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
    carried = {k: trial.user_attrs[k] for k in (DRAW,) if k in trial.user_attrs and params}  # how its settings were drawn
    study.enqueue_trial(dict(params), user_attrs={POSITION: pos, "argus:retry_of": trial.number, **carried},
                        skip_if_exists=False)


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


ARTIFACTS_TABLE = "argus_artifacts"  #: the project's own table of a campaign's shared finished work


def engine_kwargs(url: str) -> dict:
    """The engine settings of a campaign storage (Optuna's ``RDBStorage`` and the artifacts table alike):
    connections checked before use; SQLite waits up to a minute for another process's write lock."""
    kwargs: dict = {"pool_pre_ping": True}
    if url.startswith("sqlite"):
        kwargs["connect_args"] = {"timeout": 60}
    return kwargs


class SharedArtifacts:
    """A campaign's shared finished work in the project's own table ``argus_artifacts`` of the storage's
    database: one row per (study, name) — the unique key — with the artifact as JSON. Written with an insert
    that does nothing on conflict, so the first writer wins however many workers write at once; read back,
    every worker gets that first write. ``url``: the SQLAlchemy URL (``rdb_url``) of the storage, on which
    this class opens its own engine (Optuna's tables are never read or written); the table is created when
    missing."""

    def __init__(self, url: str, study: str):
        import sqlalchemy as sa
        from sqlalchemy.dialects import mysql

        self.url = url
        self.study = study
        self.engine = sa.create_engine(url, **engine_kwargs(url))
        self.table = sa.Table(
            ARTIFACTS_TABLE, sa.MetaData(),
            sa.Column("study", sa.String(255), nullable=False),
            sa.Column("name", sa.String(255), nullable=False),
            sa.Column("payload", sa.Text().with_variant(mysql.LONGTEXT(), "mysql"), nullable=False),
            sa.PrimaryKeyConstraint("study", "name", name=f"{ARTIFACTS_TABLE}_key"),
        )
        self._create()

    def _create(self) -> None:
        """``CREATE TABLE IF NOT EXISTS``, one worker at a time on PostgreSQL (where two at once can still
        collide), retried on the errors of two processes creating it together elsewhere."""
        import time

        from sqlalchemy.schema import CreateTable

        with schema_lock(self.url):
            for attempt in range(5):
                try:
                    with self.engine.begin() as conn:
                        conn.execute(CreateTable(self.table, if_not_exists=True))
                    return
                except Exception as exc:  # noqa: BLE001 - another worker creating the table at the same moment
                    if attempt == 4 or not schema_race(exc):
                        raise
                    time.sleep(0.3 * (attempt + 1))

    def _key(self, name: str):
        t = self.table
        return (t.c.study == self.study) & (t.c.name == name)

    def _upsert(self):
        """The dialect's ``INSERT … ON CONFLICT`` construct (SQLite, PostgreSQL), else None."""
        from sqlalchemy.dialects import postgresql, sqlite

        return {"sqlite": sqlite.insert, "postgresql": postgresql.insert}.get(self.engine.dialect.name)

    def insert(self, name: str, data) -> bool:
        """Store ``data`` under ``name`` unless a copy is there; whether this call's copy was stored."""
        import sqlalchemy as sa

        row = {"study": self.study, "name": name, "payload": json.dumps(data)}
        upsert = self._upsert()
        if upsert is not None:
            stmt = upsert(self.table).values(row).on_conflict_do_nothing()
            with self.engine.begin() as conn:
                if self.engine.dialect.insert_returning:  # the row back when inserted (psycopg's rowcount is -1)
                    return conn.execute(stmt.returning(self.table.c.name)).first() is not None
                return conn.execute(stmt).rowcount == 1
        try:  # any other database: the unique key refuses the second insert
            with self.engine.begin() as conn:
                conn.execute(sa.insert(self.table).values(row))
            return True
        except sa.exc.IntegrityError:
            return False

    def replace(self, name: str, data) -> None:
        """Store ``data`` under ``name``, replacing any copy (what a worker's own running summary needs)."""
        import sqlalchemy as sa

        payload = json.dumps(data)
        upsert = self._upsert()
        if upsert is not None:
            insert = upsert(self.table)
            stmt = insert.values(study=self.study, name=name, payload=payload).on_conflict_do_update(
                index_elements=["study", "name"], set_={"payload": insert.excluded.payload})
            with self.engine.begin() as conn:
                conn.execute(stmt)
            return
        with self.engine.begin() as conn:
            if conn.execute(sa.update(self.table).where(self._key(name)).values(payload=payload)).rowcount:
                return
        if not self.insert(name, data):  # inserted by another writer in between: overwrite it
            with self.engine.begin() as conn:
                conn.execute(sa.update(self.table).where(self._key(name)).values(payload=payload))

    def get(self, name: str) -> tuple[bool, Any]:
        """(whether ``name`` is stored, its data)."""
        import sqlalchemy as sa

        with self.engine.connect() as conn:
            value = conn.execute(sa.select(self.table.c.payload).where(self._key(name))).scalar()
        return (False, None) if value is None else (True, json.loads(value))

    def items(self, prefix: str) -> dict[str, Any]:
        """Every artifact whose name starts with ``prefix``, read with one query."""
        import sqlalchemy as sa

        t = self.table
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(t.c.name, t.c.payload).where(
                t.c.study == self.study, t.c.name.startswith(prefix, autoescape=True)))
            return {name: json.loads(payload) for name, payload in rows}

    def dispose(self) -> None:
        self.engine.dispose()


class Artifacts:
    """Finished work of a campaign by name (``evals/val-<key>.json``, ``evals/test-<key>.json``,
    ``trials/<hash>/gepa_candidates.json``, ``trials/<hash>/aux-<prog>.json``, ``objectives.json``,
    ``spend/<worker>.json``): files under RUN and, with an RDB storage (``shared``), the rows of
    :class:`SharedArtifacts` — the copy every worker reads (the files are then this worker's cache).
    Without one (Optuna's journal file, which one process owns) the files are all there is."""

    def __init__(self, run_dir: Path, shared: SharedArtifacts | None = None):
        self.run_dir = run_dir
        self.shared = shared
        self._cache: dict[str, Any] = {}  # shared copies this process read or wrote

    def _lookup(self, name: str) -> bool:
        """Read one shared artifact into the local copy; whether it exists."""
        found, value = self.shared.get(name)
        if found:
            self._cache[name] = value
        return found

    def items(self, prefix: str) -> dict[str, Any]:
        """Every shared artifact whose name starts with ``prefix``, as it is in the storage now (without a
        storage: the files)."""
        if self.shared is None:
            return {name: self.get(name) for name in self.names(prefix)}
        found = self.shared.items(prefix)
        self._cache.update(found)
        return found

    def get(self, name: str):
        """The shared copy (with a storage), else the file, else None."""
        if self.shared is not None and (name in self._cache or self._lookup(name)):
            return self._cache[name]
        path = self.run_dir / name
        return read_record(path, list if name.endswith("gepa_candidates.json") else dict) if path.exists() else None

    def put(self, name: str, data, *, share: bool = True, replace: bool = False) -> bool:
        """Write the file and (``share``) the shared copy; whether this call's data is the shared copy now."""
        write_json_atomic(self.run_dir / name, data, indent=1)
        return self.share(name, data, replace=replace) if share else False

    def share(self, name: str, data, *, replace: bool = False) -> bool:
        """Into the storage (no-op without one): the first writer wins unless ``replace``. Whether this call's
        data was written — False when another writer's copy was there first (``get`` then returns that
        one) or there is no storage."""
        if self.shared is None or (not replace and name in self._cache):
            return False
        if replace:
            self.shared.replace(name, data)
        elif not self.shared.insert(name, data):
            self._lookup(name)  # the first writer's copy
            return False
        self._cache[name] = data
        return True

    def names(self, prefix: str) -> list[str]:
        if self.shared is not None:
            return sorted(self.items(prefix))
        folder, _, stem = prefix.rpartition("/")
        base = self.run_dir / folder
        return sorted(f"{folder}/{p.name}" if folder else p.name for p in base.glob(f"{stem}*.json")) if base.is_dir() else []
