"""Criteo's column layout and the names of the prepared arrays.

Criteo's Display Advertising Challenge rows hold a binary label, 13 integer features
(``I1``..``I13``, counts; ``I2`` may be negative) and 26 categorical features
(``C1``..``C26``, 32-bit hashes written as 8 hex characters). A missing value is an empty
field.
"""

from __future__ import annotations

LABEL_COLUMN = "label"
INTEGER_COLUMNS: tuple[str, ...] = tuple(f"I{i}" for i in range(1, 14))
CATEGORICAL_COLUMNS: tuple[str, ...] = tuple(f"C{i}" for i in range(1, 27))
RAW_COLUMNS: tuple[str, ...] = (LABEL_COLUMN, *INTEGER_COLUMNS, *CATEGORICAL_COLUMNS)

NUM_INTEGER_FEATURES = len(INTEGER_COLUMNS)  # 13
NUM_CATEGORICAL_FEATURES = len(CATEGORICAL_COLUMNS)  # 26
NUM_RAW_FIELDS = len(RAW_COLUMNS)  # 40

# Some published Criteo slices drop trailing empty fields (README of the shared data: lines
# with 37 or 38 fields). A line is padded with empty fields when it still holds at least the
# label and all 13 integer fields; anything shorter is treated as truncated, i.e. malformed.
MIN_FIELDS_TO_PAD = 1 + NUM_INTEGER_FEATURES

# Names of the arrays in the prepared shards (and of the model's inputs).
LABEL_KEY = "label"
INTEGER_FEATURES_KEY = "int_features"
CATEGORICAL_IDS_KEY = "cat_ids"

# Every categorical vocabulary reserves id 0 for values not in the vocabulary: values unseen
# in the training part, and values rarer than the minimum count.
OOV_ID = 0

SPLITS: tuple[str, ...] = ("train", "test")
