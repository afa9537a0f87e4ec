"""Where things live: the project root, the shared data root, the cache directory."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
RESOURCES = Path(__file__).resolve().parent / "resources"


def data_root() -> Path:
    """The shared data root: ``$ARGUS_DATA_ROOT`` or ``../shared/data`` beside the project."""
    env = os.environ.get("ARGUS_DATA_ROOT")
    if env:
        return Path(env).expanduser().resolve()
    return (PROJECT_ROOT.parent / "shared" / "data").resolve()


def complaints_dir(split: str) -> Path:
    return data_root() / "us_complaints" / split


def complaint_styles() -> dict[str, str]:
    """doc_id → writing style of the annotated complaints (``us_complaints/styles.json``; {} without it).
    Complaints the file does not name (the first 18 before it existed, a user's own gold) have no entry."""
    import json

    path = data_root() / "us_complaints" / "styles.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: str(v.get("style", "")) for k, v in data.items() if isinstance(v, dict) and v.get("style")}
