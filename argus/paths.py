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
