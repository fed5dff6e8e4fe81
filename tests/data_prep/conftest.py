"""Where the real Criteo rows live (never in the repository: see the data's README)."""

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CRITEO_DIR = REPO_ROOT.parent / "shared" / "data" / "criteo"
COMBINED_FILE = CRITEO_DIR / "kaggle_dac" / "combined" / "criteo_dac_labelled_dedup.tsv"


@pytest.fixture(scope="session")
def criteo_combined_file() -> Path:
    if not COMBINED_FILE.is_file():
        pytest.skip(f"real Criteo rows not available ({COMBINED_FILE})")
    return COMBINED_FILE


@pytest.fixture(scope="session")
def criteo_raw_dir() -> Path:
    raw = CRITEO_DIR / "kaggle_dac" / "raw"
    if not raw.is_dir():
        pytest.skip(f"real Criteo rows not available ({raw})")
    return raw
