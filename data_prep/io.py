"""Prepared-data layout on disk: NumPy shards, ``metadata.json``, and readers.

A prepared directory holds::

    metadata.json          vocab sizes, integer scaling, row counts, read report, shard lists
    vocabularies.json      per categorical column, its values in id order (id = position + 1)
    train-00000.npz ...    shards: label (int8), int_features (float32 [n, 13]),
    test-00000.npz ...             cat_ids (int32 [n, 26])

NumPy shards need no extra dependency, load at memory speed and feed ``tf.data`` through
:func:`load_tf_dataset` (TensorFlow is imported only there).

A directory is written whole or not at all (:func:`replacing_directory`): a failed run leaves
the previous one as it was. The hidden siblings a run works in (``.DIR.tmp-*``, ``.DIR.old-*``)
carry its process id, start time and host in their names, so that a later run removes those
of a run that was killed (``kill -9``, a crash) and no other: see :func:`remove_stale_siblings`.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import re
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from data_prep.schema import (
    CATEGORICAL_IDS_KEY,
    INTEGER_FEATURES_KEY,
    LABEL_KEY,
    NUM_CATEGORICAL_FEATURES,
    NUM_INTEGER_FEATURES,
    SPLITS,
)

if TYPE_CHECKING:
    import tensorflow as tf

METADATA_FILE = "metadata.json"
VOCABULARIES_FILE = "vocabularies.json"
FORMAT_VERSION = 1
ARRAY_KEYS = (LABEL_KEY, INTEGER_FEATURES_KEY, CATEGORICAL_IDS_KEY)
# The names a prepared directory may hold (write_json's ".tmp" names included).
_PREPARED_NAME = re.compile(r"(?:train|test)-\d{5,}\.npz|(?:metadata|vocabularies)\.json(?:\.tmp)?")


class ShardWriter:
    """Writes one split's arrays as numbered ``.npz`` shards and counts rows and positives.

    Example:
        >>> import tempfile
        >>> writer = ShardWriter(tempfile.mkdtemp(), "train")
        >>> writer.write({"label": np.array([1, 0], np.int8),
        ...               "int_features": np.zeros((2, 13), np.float32),
        ...               "cat_ids": np.zeros((2, 26), np.int32)})
        >>> writer.rows, writer.positives, writer.shards
        (2, 1, ['train-00000.npz'])
    """

    def __init__(self, directory: str | os.PathLike, split: str) -> None:
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        self.directory = Path(directory)
        self.split = split
        self.shards: list[str] = []
        self.rows = 0
        self.positives = 0

    def write(self, arrays: dict[str, np.ndarray]) -> None:
        _check_arrays(arrays)
        name = f"{self.split}-{len(self.shards):05d}.npz"
        np.savez(self.directory / name, **{k: arrays[k] for k in ARRAY_KEYS})
        self.shards.append(name)
        self.rows += len(arrays[LABEL_KEY])
        self.positives += int(np.count_nonzero(arrays[LABEL_KEY]))

    def summary(self) -> dict[str, Any]:
        return {"rows": self.rows, "positives": self.positives, "shards": list(self.shards)}


def _check_arrays(arrays: dict[str, np.ndarray]) -> None:
    n = len(arrays[LABEL_KEY])
    if arrays[INTEGER_FEATURES_KEY].shape != (n, NUM_INTEGER_FEATURES):
        raise ValueError(f"int_features has shape {arrays[INTEGER_FEATURES_KEY].shape}")
    if arrays[CATEGORICAL_IDS_KEY].shape != (n, NUM_CATEGORICAL_FEATURES):
        raise ValueError(f"cat_ids has shape {arrays[CATEGORICAL_IDS_KEY].shape}")


def write_json(path: str | os.PathLike, payload: Any) -> None:
    """Write JSON atomically (to a temporary name, then rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


@contextlib.contextmanager
def replacing_directory(directory: str | os.PathLike) -> Iterator[Path]:
    """Yield an empty temporary sibling of ``directory`` to write into; when the block ends
    without an error, it takes the place of ``directory`` (the old one is renamed aside, the
    new one renamed into place, then the old one removed). On an error the temporary
    directory is removed and ``directory`` is left as it was.

    ``directory`` (symbolic links resolved) must be absent, empty, or a prepared directory
    holding nothing but prepared-data files: anything else is refused before any work, so
    that no other file (the input, say) is ever deleted. The new directory keeps the old
    one's permission bits.

    Raises:
        NotADirectoryError: if ``directory`` is a file.
        ValueError: if ``directory`` holds files that are not prepared data.

    Example:
        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "prepared"
        >>> with replacing_directory(target) as work:
        ...     _ = (work / "metadata.json").write_text("{}")
        >>> sorted(p.name for p in target.iterdir())
        ['metadata.json']
    """
    target = Path(os.path.realpath(directory))
    if target.parent.is_dir():
        remove_stale_siblings(target)
    mode = _check_replaceable(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-{_owner_tag()}-", dir=target.parent))
    try:
        yield work
        os.chmod(work, mode)
        _swap_into_place(work, target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def _check_replaceable(target: Path) -> int:
    """The permission bits the replacement gets; raises if ``target`` must not be replaced."""
    if not target.exists():
        umask = os.umask(0)
        os.umask(umask)
        return 0o777 & ~umask
    if not target.is_dir():
        raise NotADirectoryError(f"{target} exists and is not a directory")
    foreign = sorted(p.name for p in target.iterdir() if not _PREPARED_NAME.fullmatch(p.name))
    if foreign:
        shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
        raise ValueError(
            f"refusing to replace {target}: it holds files that are not prepared data "
            f"({shown}); give a new or empty directory, or one written by data_prep"
        )
    return stat.S_IMODE(target.stat().st_mode)


def _swap_into_place(work: Path, target: Path) -> None:
    if not os.path.lexists(target):
        os.rename(work, target)
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-{_owner_tag()}-", dir=target.parent))
    old = aside / target.name
    os.rename(target, old)
    try:
        os.rename(work, target)
    except BaseException:
        os.rename(old, target)
        os.rmdir(aside)
        raise
    shutil.rmtree(aside, ignore_errors=True)


# ".NAME.tmp-PID-START-HOST-BOOT-RANDOM": the owner's process id, its start time (clock ticks
# after boot, 0 where unknown), and digests of the host name and of the boot id.
_SIBLING = re.compile(
    r"\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-(?P<start>\d+)-"
    r"(?P<host>[0-9a-f]{8})-(?P<boot>[0-9a-f]{8})-[^.]+"
)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _boot_id() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return ""


def _process_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks after boot) of a process (Linux), else ``None``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        fields = data[data.rindex(b")") + 2 :].split()
        return fields[0].decode(), int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _owner_tag() -> str:
    found = _process_stat(os.getpid())
    start = found[1] if found else 0
    return f"{os.getpid()}-{start}-{_digest(socket.gethostname())}-{_digest(_boot_id())}"


def _owner_is_dead(match: re.Match) -> bool:
    """True only when the process that named the directory is provably gone: same host, and
    the machine rebooted since, or no process has that id, or the one that has it started at
    another time (the id was reused), or it is a zombie (killed, never to write again)."""
    if match["host"] != _digest(socket.gethostname()):
        return False  # another machine sharing the file system: cannot tell
    if match["boot"] != _digest(_boot_id()):
        return True
    pid, start = int(match["pid"]), int(match["start"])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # it exists (another user's)
    except OSError:
        return False
    found = _process_stat(pid)
    if found is None or start == 0:
        return False  # no start time to compare: it may be the owner
    state, started = found
    return started != start or state in ("Z", "X")


def remove_stale_siblings(directory: str | os.PathLike) -> list[Path]:
    """Remove the working siblings of ``directory`` left by runs that were killed; returns
    them. A ``.DIR.tmp-*`` of a dead run is an unfinished output: removed. A ``.DIR.old-*``
    of a dead run holds the previous output; if ``DIR`` itself is missing (the run died
    between its two renames), that output is moved back first. Siblings whose owner may be
    alive (a concurrent run, another host, a name without an owner) are left alone.

    Example:
        >>> import tempfile, pathlib
        >>> parent = pathlib.Path(tempfile.mkdtemp())
        >>> (parent / ".out.tmp-legacy").mkdir()  # no owner in the name: kept
        >>> remove_stale_siblings(parent / "out"), sorted(p.name for p in parent.iterdir())
        ([], ['.out.tmp-legacy'])
    """
    target = Path(directory)
    removed = []
    for sibling in sorted(target.parent.glob(f".{glob.escape(target.name)}.*-*")):
        match = _SIBLING.fullmatch(sibling.name)
        if not match or match["name"] != target.name or not sibling.is_dir():
            continue
        if sibling.is_symlink() or not _owner_is_dead(match):
            continue
        if match["kind"] == "old":
            previous = sibling / target.name
            if not os.path.lexists(target) and previous.is_dir() and not previous.is_symlink():
                with contextlib.suppress(OSError):
                    os.rename(previous, target)
        shutil.rmtree(sibling, ignore_errors=True)
        if not os.path.lexists(sibling):
            removed.append(sibling)
    return removed


def read_metadata(directory: str | os.PathLike) -> dict[str, Any]:
    """The ``metadata.json`` of a prepared directory.

    Raises:
        FileNotFoundError: if ``directory`` is not a prepared-data directory.
    """
    path = Path(directory) / METADATA_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{directory} is not a prepared data directory (no {METADATA_FILE}); "
            "create one with `python -m data_prep --input PATH --output DIR`"
        )
    with open(path, encoding="utf-8") as f:
        metadata = json.load(f)
    if metadata.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path}: format_version {metadata.get('format_version')!r}, expected {FORMAT_VERSION}"
        )
    return metadata


def shard_paths(directory: str | os.PathLike, split: str) -> list[Path]:
    metadata = read_metadata(directory)
    if split not in metadata["splits"]:
        raise ValueError(f"unknown split {split!r}; the data has {sorted(metadata['splits'])}")
    return [Path(directory) / name for name in metadata["splits"][split]["shards"]]


def load_split_arrays(directory: str | os.PathLike, split: str) -> dict[str, np.ndarray]:
    """All rows of one split in memory: ``label``, ``int_features``, ``cat_ids``."""
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ARRAY_KEYS}
    for path in shard_paths(directory, split):
        with np.load(path) as shard:
            for key in ARRAY_KEYS:
                parts[key].append(shard[key])
    empty = {
        LABEL_KEY: np.zeros(0, np.int8),
        INTEGER_FEATURES_KEY: np.zeros((0, NUM_INTEGER_FEATURES), np.float32),
        CATEGORICAL_IDS_KEY: np.zeros((0, NUM_CATEGORICAL_FEATURES), np.int32),
    }
    return {k: np.concatenate(v) if v else empty[k] for k, v in parts.items()}


def load_tf_dataset(
    directory: str | os.PathLike,
    split: str,
    batch_size: int,
    *,
    shuffle: bool = False,
    seed: int | None = None,
    shuffle_buffer: int = 100_000,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """A batched ``tf.data.Dataset`` of ``(features, label)`` for one split.

    ``features`` is a dict ``{"int_features": float32 [b, 13], "cat_ids": int32 [b, 26]}``
    and ``label`` is float32 ``[b]``. With ``shuffle=True`` the shard order and the rows (in a
    buffer of ``shuffle_buffer``) are shuffled anew every epoch; an integer ``seed`` makes the
    order reproducible.
    """
    import tensorflow as tf

    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    paths = [str(p) for p in shard_paths(directory, split)]
    if not paths:
        raise ValueError(f"split {split!r} of {directory} has no shards")
    rows = int(read_metadata(directory)["splits"][split]["rows"])
    batches = rows // batch_size if drop_remainder else -(-rows // batch_size)

    def read_shard(path: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        with np.load(path.decode() if isinstance(path, bytes) else path) as shard:
            return (
                shard[LABEL_KEY].astype(np.float32),
                shard[INTEGER_FEATURES_KEY].astype(np.float32),
                shard[CATEGORICAL_IDS_KEY].astype(np.int32),
            )

    def shard_dataset(path: tf.Tensor) -> tf.data.Dataset:
        label, ints, cats = tf.numpy_function(
            read_shard, [path], (tf.float32, tf.float32, tf.int32), stateful=False
        )
        label.set_shape([None])
        ints.set_shape([None, NUM_INTEGER_FEATURES])
        cats.set_shape([None, NUM_CATEGORICAL_FEATURES])
        features = {INTEGER_FEATURES_KEY: ints, CATEGORICAL_IDS_KEY: cats}
        return tf.data.Dataset.from_tensor_slices((features, label))

    files = tf.data.Dataset.from_tensor_slices(paths)
    if shuffle and len(paths) > 1:
        files = files.shuffle(len(paths), seed=seed, reshuffle_each_iteration=True)
    dataset = files.interleave(
        shard_dataset,
        cycle_length=1 if not shuffle else min(4, len(paths)),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    # The shards are read by numpy_function, so tf.data cannot count the batches: state it
    # (Keras then shows a full progress bar and knows where an epoch ends).
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(batches))
    return dataset.prefetch(tf.data.AUTOTUNE)
