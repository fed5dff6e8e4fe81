"""Where the real Criteo rows live (never in the repository: see the data's README)."""

from pathlib import Path

import pytest

from tests.helpers.criteo import CRITEO_DIR


@pytest.fixture(scope="session")
def criteo_raw_dir() -> Path:
    raw = CRITEO_DIR / "kaggle_dac" / "raw"
    if not raw.is_dir():
        pytest.skip(f"real Criteo rows not available ({raw})")
    return raw


# Byte strings that are distinct, most of them not UTF-8: each must stay its own category.
# "\xef\xbf\xbd" is a literal U+FFFD (what errors="replace" makes of any bad byte), and
# "\\xff" / "\xef\xbf\xbdff" spell what a naive escape of b"\xff" would give.
UNDECODABLE = [
    b"\xff", b"\xfe", b"\xff\xfe", b"\xc3", b"\xc3(", b"\xed\xb3\xbf", b"\xef\xbf\xbd",
    b"\xef\xbf\xbdff", b"\\xff", b"\xef\xbf\xbd\xef\xbf\xbd", b"caf\xc3\xa9",
]  # fmt: skip


@pytest.fixture
def write_undecodable():
    """``write(path, repeat=1)``: raw TSV rows whose C1 is each of ``UNDECODABLE`` (``repeat``
    rows each, C2 tagging the value as ``g<k>``); returns ``UNDECODABLE``."""

    def write(path: Path, repeat: int = 1) -> list[bytes]:
        ints = [str(i).encode() for i in range(13)]
        tail = [f"{i:08x}".encode() for i in range(2, 26)]
        lines = []
        for k, value in enumerate(UNDECODABLE):
            line = b"\t".join([b"1", *ints, value, f"g{k}".encode(), *tail]) + b"\n"
            lines += [line] * repeat
        path.write_bytes(b"".join(lines))
        return list(UNDECODABLE)

    return write
