"""What travels in Flower's messages: the release's settings (server -> clients) and a
client's report (client -> server), as Flower records.

The server puts the release into the evaluate message's ``ConfigRecord`` under
`RELEASE_KEY` as one JSON text (mechanism, epsilon, delta, the exact threshold grid,
options, repeats, the number of clients the noise shares are sized for, and SecAgg+'s limb
width for the secure mechanisms). It never sends a seed: a server that chose the clients'
seeds could subtract their noise. A client answers with one ``ArrayRecord`` under
`REPORT_KEY`: its released counts flattened, followed by its number of examples
(which does not depend on any label); for the secure mechanisms the same vector cut into
exact SecAgg+ limbs ([`dpauc_tf.flower.encoding`][]), which ``secagg_evaluate_mod``
masks before it leaves the client.

Pure Python and NumPy (Flower is imported only by the functions that build records).

Examples:
    >>> from dpauc_tf.mechanisms.release import ReleaseSpec
    >>> spec = ReleaseSpec.make("histogram", epsilon=1.0, num_thresholds=5)
    >>> text = release_config(spec, num_clients=3)[RELEASE_KEY]
    >>> settings = release_from_config({RELEASE_KEY: text})
    >>> settings.spec == spec, settings.num_clients, settings.limb_bits
    (True, 3, None)
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpauc_tf.flower.encoding import LimbLayout
from dpauc_tf.mechanisms.release import ReleaseSpec, check_repeats

RELEASE_KEY = "dpauc.release"  # in the evaluate message's ConfigRecord ("config")
REPORT_KEY = "dpauc.report"  # the ArrayRecord of a client's reply
CONFIG_RECORD = "config"  # Flower's convention (FedAvg sends "arrays" and "config")
ARRAYS_RECORD = "arrays"


@dataclasses.dataclass(frozen=True)
class ReleaseSettings:
    """One evaluation's settings as every client receives them.

    Attributes:
      spec: the release (its ``seed`` is always ``None`` here: seeds stay on the clients); a
        one with ``num_classes`` for a one-vs-rest release (every client reports its ``[C, T + 1]`` class counts).
      num_clients: the clients the secure mechanisms' noise shares are sized for.
      repeats: independent releases in this round.
      limb_bits: SecAgg+'s limb width (secure mechanisms), else ``None``.
    """

    spec: ReleaseSpec
    num_clients: int
    repeats: int = 1
    limb_bits: int | None = None

    @property
    def secure(self) -> bool:
        return self.spec.capabilities.secure

    @property
    def multiclass(self) -> bool:
        return self.spec.one_vs_rest

    @property
    def layout(self) -> LimbLayout | None:
        return None if self.limb_bits is None else LimbLayout.for_bits(self.limb_bits)

    def mechanism(self):
        """The mechanism every client releases with (built for ``num_clients`` shares)."""
        return self.spec.build(self.num_clients)

    def report_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shape of every array of one client's release (sorted keys), from the mechanism."""
        mechanism = self.mechanism()
        if self.multiclass:
            zeros = np.zeros((self.spec.num_classes, self.spec.thresholds.num_buckets))
        else:
            zeros = np.zeros(mechanism.count_thresholds(self.spec.thresholds).num_buckets)
        release = mechanism.release(zeros, zeros, seed=0, repeats=self.repeats)
        return {key: tuple(release[key].shape) for key in sorted(release)}

    def report_size(self) -> int:
        """Values in one report vector: the release, then the number of examples."""
        return sum(int(np.prod(shape)) for shape in self.report_shapes().values()) + 1


def release_config(
    spec: ReleaseSpec,
    *,
    num_clients: int,
    repeats: int = 1,
    layout: LimbLayout | None = None,
) -> dict[str, str]:
    """The evaluate message's config entry describing the release (``{RELEASE_KEY: json}``).

    ``layout`` is required for the secure mechanisms (SecAgg+'s limbs) and refused for the
    others. The spec's seed is not sent; a one-vs-rest spec adds its number of classes
    and headline average.
    """
    check_repeats(repeats)
    if spec.capabilities.secure and layout is None:
        raise ValueError(f"mechanism {spec.mechanism!r} is secure: give SecAgg+'s limb layout")
    if not spec.capabilities.secure and layout is not None:
        raise ValueError(f"mechanism {spec.mechanism!r} is not secure: no limb layout")
    body = {
        **spec.to_fields(),  # the spec's own wire form (no seed)
        "num_clients": int(num_clients),
        "repeats": int(repeats),
        "limb_bits": None if layout is None else layout.bits,
    }
    return {RELEASE_KEY: json.dumps(body)}


def release_from_config(config: Mapping[str, Any]) -> ReleaseSettings:
    """Reads `release_config` back (a client's side); one-line ``ValueError`` if the
    message carries no release or a malformed one."""
    if RELEASE_KEY not in config:
        raise ValueError(
            f"the evaluate message carries no {RELEASE_KEY!r} config entry: the server must "
            "run dpauc_tf.flower.DPAUCStrategy (or dpauc_tf.flower.evaluate_round)"
        )
    try:
        body = json.loads(str(config[RELEASE_KEY]))
        settings = ReleaseSettings(
            spec=ReleaseSpec.from_fields(body),
            num_clients=int(body["num_clients"]),
            repeats=check_repeats(int(body["repeats"])),
            limb_bits=None if body["limb_bits"] is None else int(body["limb_bits"]),
        )
        settings.mechanism()  # a bad name, epsilon or option fails here, in one line
    except (KeyError, TypeError, json.JSONDecodeError) as error:
        raise ValueError(f"malformed {RELEASE_KEY!r} config entry: {error}") from None
    return settings


def flatten_report(report: Mapping[str, np.ndarray], num_examples: float) -> np.ndarray:
    """A release (sorted keys) and the number of examples as one float64 vector."""
    parts = [np.asarray(report[key], np.float64).ravel() for key in sorted(report)]
    return np.concatenate([*parts, [float(num_examples)]])


def unflatten_report(
    vector: np.ndarray, shapes: Mapping[str, tuple[int, ...]]
) -> tuple[dict[str, np.ndarray], float]:
    """Inverse of `flatten_report`: the release and the number of examples."""
    vector = np.asarray(vector, np.float64).ravel()
    out, start = {}, 0
    for key in sorted(shapes):
        size = int(np.prod(shapes[key], dtype=np.int64))
        out[key] = vector[start : start + size].reshape(shapes[key])
        start += size
    if start + 1 != vector.size:
        raise ValueError(f"a report has {vector.size} values, expected {start + 1}")
    return out, float(vector[start])


def report_record(vector: np.ndarray, layout: LimbLayout | None):
    """The reply's ``RecordDict``: the vector (or its SecAgg+ limbs) under `REPORT_KEY`."""
    from flwr.app import ArrayRecord, RecordDict

    arrays = [np.asarray(vector, np.float64)] if layout is None else layout.encode(vector)
    return RecordDict({REPORT_KEY: ArrayRecord(arrays)})


def report_arrays(content) -> list[np.ndarray]:
    """The arrays of a reply's `REPORT_KEY` record (one vector, or the limbs)."""
    if REPORT_KEY not in content.array_records:
        raise ValueError(f"the reply carries no {REPORT_KEY!r} ArrayRecord")
    return content.array_records[REPORT_KEY].to_numpy_ndarrays()
