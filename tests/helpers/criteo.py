"""Where the real Criteo rows live: beside the checkout, in ``../shared/data/criteo`` (never in
the repository: see the data's README, including its licence)."""

from __future__ import annotations

from pathlib import Path

CRITEO_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "criteo"
COMBINED_FILE = CRITEO_DIR / "kaggle_dac" / "combined" / "criteo_dac_labelled_dedup.tsv"
