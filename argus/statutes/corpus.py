"""Where the statute XML comes from: the 83-code subset with its MANIFEST, or the full corpus archive.

Data is read in place from the shared data root (:func:`argus.paths.data_root`); the 294 MB corpus
archive is streamed through ``zstd -dc`` and ``tarfile`` without being unpacked to disk.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from argus.errors import ConfigError, InputError
from argus.paths import data_root


@dataclass(frozen=True)
class XmlSource:
    """One statute XML document: a name for reports and either a path or the raw bytes."""

    name: str
    path: Path | None = None
    data: bytes | None = None

    def read(self) -> bytes:
        if self.data is not None:
            return self.data
        assert self.path is not None
        return self.path.read_bytes()

    def head(self, size: int = 16384) -> bytes:
        """The first ``size`` bytes (a file is not read further)."""
        if self.data is not None:
            return self.data[:size]
        assert self.path is not None
        with self.path.open("rb") as fh:
            return fh.read(size)


def statutes_dir(root: Path | None = None) -> Path:
    return (root or data_root()) / "de_statutes"


def manifest(root: Path | None = None) -> list[dict]:
    """The MANIFEST of the 83-code subset: [{"jurabk", "bjnr", "file"}]."""
    path = statutes_dir(root) / "gii" / "MANIFEST.json"
    if not path.exists():
        raise ConfigError(
            f"statute data not found: {path} is missing. Set ARGUS_DATA_ROOT to the folder that holds "
            "de_statutes/gii (see the data README)."
        )
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path} is not valid JSON: {exc}") from exc


def subset_sources(codes: Iterable[str] | None = None, root: Path | None = None) -> list[XmlSource]:
    """Sources of the 83-code subset, optionally restricted to ``codes`` (jurabk or abbreviation).

    Names are matched against the manifest's ``jurabk`` first, then case-insensitively, then with a
    trailing year ignored ("UWG" → "UWG 2004"); an unknown name raises :class:`InputError` listing
    close matches.
    """
    entries = manifest(root)
    folder = statutes_dir(root) / "gii"
    if codes is None:
        return [XmlSource(e["jurabk"], folder / e["file"]) for e in entries]
    by_key = {e["jurabk"]: e for e in entries}
    folded = {e["jurabk"].casefold(): e for e in entries}
    stripped: dict[str, list[dict]] = {}
    for e in entries:
        base = e["jurabk"].rsplit(" ", 1)
        if len(base) == 2 and base[1].isdigit() and len(base[1]) == 4:
            stripped.setdefault(base[0].casefold(), []).append(e)
    chosen: list[XmlSource] = []
    for name in codes:
        name = name.strip()
        if not name:
            continue
        entry = by_key.get(name) or folded.get(name.casefold())
        if entry is None and len(stripped.get(name.casefold(), [])) == 1:
            entry = stripped[name.casefold()][0]
        if entry is None:
            import difflib

            close = difflib.get_close_matches(name, list(by_key), n=5, cutoff=0.4)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise InputError(
                f"unknown code {name!r}: not in the statute subset's MANIFEST ({len(entries)} codes, keyed by "
                f"jurabk such as 'BGB', 'SGB 5', 'UWG 2004').{hint}"
            )
        chosen.append(XmlSource(entry["jurabk"], folder / entry["file"]))
    return chosen


def corpus_archive(root: Path | None = None) -> Path:
    path = statutes_dir(root) / "gii-corpus.tar.zst"
    if not path.exists():
        raise ConfigError(f"full corpus archive not found: {path}")
    return path


def archive_sources(archive: Path | None = None) -> Iterator[XmlSource]:
    """Stream every ``*.xml`` member of the corpus archive (``.tar.zst`` or plain ``.tar``)."""
    archive = archive or corpus_archive()
    if str(archive).endswith(".zst"):
        if shutil.which("zstd") is None:
            raise ConfigError("the corpus archive is zstd-compressed but the `zstd` program is not installed")
        proc = subprocess.Popen(["zstd", "-dc", str(archive)], stdout=subprocess.PIPE)
        stream = proc.stdout
    else:
        proc = None
        stream = open(archive, "rb")  # noqa: SIM115 - closed below
    try:
        with tarfile.open(fileobj=stream, mode="r|") as tf:
            for member in tf:
                if member.isfile() and member.name.endswith(".xml"):
                    fh = tf.extractfile(member)
                    if fh is None:
                        continue
                    yield XmlSource(member.name.rsplit("/", 1)[-1], data=fh.read())
    finally:
        if stream is not None:
            stream.close()
        if proc is not None:
            proc.wait()


def directory_sources(folder: Path) -> list[XmlSource]:
    """Every ``*.xml`` file in a folder (sorted), e.g. an unpacked corpus or a user's own selection."""
    if not folder.is_dir():
        raise InputError(f"not a folder: {folder}")
    return [XmlSource(p.name, p) for p in sorted(folder.glob("*.xml"))]
