"""Where the real Criteo rows live (never in the repository: see the data's README)."""

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
COMBINED_FILE = (
    REPO_ROOT.parent / "shared" / "data" / "criteo" / "kaggle_dac" / "combined"
    / "criteo_dac_labelled_dedup.tsv"
)  # fmt: skip


@pytest.fixture(scope="session")
def criteo_combined_file() -> Path:
    if not COMBINED_FILE.is_file():
        pytest.skip(f"real Criteo rows not available ({COMBINED_FILE})")
    return COMBINED_FILE
