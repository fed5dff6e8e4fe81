"""The one registry of mechanisms: every name, where its class lives, and a one-line summary.

Every caller (the Keras metric, the command line, the simulation, TFF, the audit, the demo,
the docs table) reads this registry: [`list_mechanisms`][] for choices,
[`get_mechanism`][] to build one, `require` to refuse what a mechanism's
[`Capabilities`][] exclude, with one message per
capability. What a mechanism can take (capabilities, accepted estimators, grid rule, option
types) is stated on its class ([`CountMechanism`][]); an entry holds only the name, where the
class lives and its summary, and the classes load on first use, so listing the names and
summaries (``dpauc --help``) imports neither TensorFlow nor dp-accounting (filtering on a
capability loads the classes).

Adding a mechanism means one new module and one [`MechanismSpec`][] line in
`BUILTIN_MECHANISMS` (or [`register_mechanism`][] from outside the package).

    >>> "histogram" in list_mechanisms()
    True
    >>> list_mechanisms(secure=True)
    ['secure-histogram', 'secure-rank-sum', 'secure-tree-histogram']
    >>> get_mechanism("histogram", epsilon=1.0, num_thresholds=10).noise_scale
    2.0
    >>> require(get_mechanism("score-noise", epsilon=1.0, num_thresholds=10), "keras_metric")
    Traceback (most recent call last):
    ...
    ValueError: mechanism 'score-noise' cannot be used as a Keras metric (DPAUC): it adds noise to every score before counting, not to counts
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dpauc_tf.core.vocabulary import is_roc_auc
from dpauc_tf.mechanisms.capabilities import Capabilities
from dpauc_tf.mechanisms.laws import Deployment
from dpauc_tf.mechanisms.option_types import (
    BOOL,
    OPTION_TYPES,
    RESERVED_OPTIONS,
    OptionType,
    OptionValueError,
    _is_bool,
)

if TYPE_CHECKING:  # pragma: no cover
    from dpauc_tf.mechanisms.base import CountMechanism


@dataclasses.dataclass(frozen=True)
class MechanismSpec:
    """One registry entry: the name, the class (``"module:Class"`` or the class itself) and a
    one-line summary. ``capabilities`` and ``options`` are the class's own (its
    ``capabilities`` and ``option_types`` class attributes; reading them loads the class)."""

    name: str
    target: Any
    summary: str

    def load(self) -> type[CountMechanism]:
        if isinstance(self.target, str):
            module, _, attribute = self.target.partition(":")
            return getattr(importlib.import_module(module), attribute)
        return self.target

    @property
    def capabilities(self) -> Capabilities:
        """The class's [`Capabilities`][] (loads the class)."""
        return self.load().capabilities

    @property
    def options(self) -> Mapping[str, OptionType]:
        """The class's declared option types beyond `OPTION_TYPES` (loads the class)."""
        return self.load().option_types


_M = "dpauc_tf.mechanisms."
BUILTIN_MECHANISMS: tuple[MechanismSpec, ...] = (
    MechanismSpec(
        "histogram",
        _M + "histogram:HistogramLaplace",
        "Laplace(2/eps) on the positive and negative counts of every score bucket",
    ),
    MechanismSpec(
        "histogram-public-scores",
        _M + "histogram:HistogramPublicScores",
        "Laplace(1/eps) on the positive counts; the score histogram is published",
    ),
    MechanismSpec(
        "tree-histogram",
        _M + "tree:TreeHistogram",
        "Laplace noise on every node of a 4-ary tree of class counts (fine grids)",
    ),
    MechanismSpec(
        "secure-histogram",
        _M + "secure_histogram:SecureHistogram",
        "integer counts + discrete Laplace (or Skellam) shares, summed by secure aggregation",
    ),
    MechanismSpec(
        "secure-tree-histogram",
        _M + "tree:SecureTreeHistogram",
        "the tree with integer noise shares, summed by secure aggregation",
    ),
    MechanismSpec(
        "paper",
        _M + "paper:PaperLaplace",
        "DPAUC_Lap as published: Laplace(4T/eps) on each of 4T cumulative counts",
    ),
    MechanismSpec(
        "paper-gaussian",
        _M + "paper:PaperGaussian",
        "the paper's 4T counts with Gaussian noise, for (eps, delta)",
    ),
    MechanismSpec(
        "rr",
        _M + "randomized_response:RandomizedResponse",
        "randomized response on every label (flip with p = 1/(1+e^eps)), debiased AUC",
    ),
    MechanismSpec(
        "score-noise",
        _M + "score_noise:ScoreNoise",
        "Laplace(1/eps) on every score, exact labels: score DP, labels NOT protected",
    ),
    MechanismSpec(
        "auc-only",
        _M + "auc_only:AucOnly",
        "one holder's exact AUC + Laplace(1/(m eps)), m a noisy lower bound of min(P, N); no curve",
    ),
    MechanismSpec(
        "rank-sum",
        _M + "rank_sum:RankSum",
        "centred rank sum + Laplace(D/((1-c) eps)), positive count + Laplace; pure eps; no curve",
    ),
    MechanismSpec(
        "secure-rank-sum",
        _M + "secure_rank_sum:SecureRankSum",
        "rank-sum in two secure sums (bucket totals; 2S and P + discrete Laplace shares); no curve",
    ),
    MechanismSpec(
        "none",
        _M + "none:NoNoise",
        "no noise: the exact counts, NOT private (ground truth)",
    ),
)

MECHANISMS: dict[str, MechanismSpec] = {spec.name: spec for spec in BUILTIN_MECHANISMS}

# Why a capability is missing, per capability (the one place such refusals are worded).
_REFUSALS = {
    "keras_metric": (
        "be used as a Keras metric (DPAUC)",
        "it adds noise to every score before counting, not to counts",
    ),
    "federated": (
        "run in dpauc_tf.federated.evaluate",
        "its client step is not a release of bucket counts",
    ),
    "fed_eval": (
        "add client-side noise in build_fed_eval",
        "build_dpauc_metrics_aggregation_process takes the histogram and secure mechanisms "
        "only; use dpauc_tf.federated.evaluate",
    ),
    "xla": (
        "run under XLA (jit_compile)",
        "its noise is sampled by an op XLA cannot compile",
    ),
}


def register_mechanism(cls: type[CountMechanism], *, summary: str) -> type[CountMechanism]:
    """Makes a mechanism class available by its ``name``, with its one-line summary.

    The class must subclass [`CountMechanism`][] and states what it can take as class
    attributes: ``capabilities`` ([`Capabilities`][]) and ``option_types``, the types of
    constructor options that are not in `OPTION_TYPES` (an undeclared one is typed by its
    default: ``bool``, ``int``, ``float``, ``str``, or passed as given when the default is
    ``None``). A name that is taken raises.
    """
    from dpauc_tf.mechanisms.base import CountMechanism

    if not (isinstance(cls, type) and issubclass(cls, CountMechanism)):
        raise TypeError(f"{cls!r} is not a CountMechanism subclass")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__} needs a class attribute 'name'")
    if not isinstance(cls.capabilities, Capabilities):
        raise TypeError(f"{cls.__name__}.capabilities must be a Capabilities instance")
    if not all(isinstance(v, OptionType) for v in cls.option_types.values()):
        raise TypeError(f"{cls.__name__}.option_types must map option names to OptionType")
    if name in MECHANISMS and MECHANISMS[name].load() is not cls:
        raise ValueError(f"a mechanism named {name!r} is already registered")
    MECHANISMS[name] = MechanismSpec(name, cls, summary)
    return cls


def unregister_mechanism(name: str) -> None:
    """Removes a mechanism registered with [`register_mechanism`][] (built-ins stay)."""
    if any(spec.name == name for spec in BUILTIN_MECHANISMS):
        raise ValueError(f"{name!r} is built in and cannot be unregistered")
    MECHANISMS.pop(name, None)


def mechanism_spec(name: str) -> MechanismSpec:
    """The registry entry of ``name``; ``ValueError`` naming the choices otherwise."""
    if name not in MECHANISMS:
        raise ValueError(f"unknown mechanism {name!r}; choose one of {list_mechanisms()}")
    return MECHANISMS[name]


def mechanism_class(name: str) -> type[CountMechanism]:
    """The class registered under ``name`` (imported on first use)."""
    return mechanism_spec(name).load()


def capabilities_of(cls: type | str) -> Capabilities:
    """The capabilities of a mechanism class, or of the class registered under a name (the
    class attribute ``capabilities``)."""
    if isinstance(cls, str):
        return mechanism_class(cls).capabilities
    return cls.capabilities


def list_mechanisms(*, private: bool | None = None, **capabilities: Any) -> list[str]:
    """Registered names, sorted, optionally only those with the given capability values.

    ``private=True`` leaves out ``none``; keyword arguments filter on
    [`Capabilities`][] fields (``keras_metric=True``).
    """
    fields = {f.name for f in dataclasses.fields(Capabilities)}
    unknown = set(capabilities) - fields
    if unknown:
        raise TypeError(f"unknown capabilities {sorted(unknown)}; known: {sorted(fields)}")
    if private is None and not capabilities:  # names only: no class is loaded
        return sorted(MECHANISMS)
    names = []
    for name, spec in MECHANISMS.items():
        caps = spec.capabilities
        if private is not None and (caps.protects != "nothing") != private:
            continue
        if all(getattr(caps, key) == value for key, value in capabilities.items()):
            names.append(name)
    return sorted(names)


def default_mechanism(
    curve: str = "ROC",
    summation_method: str = "interpolation",
    delta: float | None = None,
    *,
    needs_curve: bool = False,
    deployment: Deployment | str = Deployment.CENTRAL,
) -> str:
    """The lowest-error mechanism for what is asked and where the labels are (every entry
    point's default; the figures are in ``docs/choosing_parameters.md``, measured by
    ``benchmarks/bench_default_mechanism.py``).

    The ROC AUC (``curve="ROC"``, ``summation_method="interpolation"``, no ``needs_curve``):

    * ``CENTRAL`` (one data holder): ``"rank-sum"`` (pure epsilon), or ``"auc-only"`` when a
      ``delta`` is given (about 10% lower error than ``rank-sum`` on large test sets);
    * ``SECURE`` (secure aggregation): ``"secure-rank-sum"``, at the central error whatever the
      number of clients (Skellam noise when a ``delta`` is given);
    * ``FEDERATED`` (each client adds its own noise, the server sees every report):
      ``"rank-sum"`` with local noise per client (its error grows as ``sqrt(K)``, still about
      6x below local ``histogram`` at every ``K`` measured).

    A curve (``curve="PR"``, the other summation methods, ``needs_curve``: a plot, one-vs-rest)
    keeps the histograms: ``"secure-histogram"`` under secure aggregation, ``"histogram"``
    otherwise. Without secure aggregation no mechanism spends a ``delta`` usefully: the pure
    epsilon default is returned, and refuses the ``delta`` in one line (pure epsilon-DP is
    (epsilon, delta)-DP for every delta).

        >>> default_mechanism(), default_mechanism(delta=1e-6), default_mechanism("PR")
        ('rank-sum', 'auc-only', 'histogram')
        >>> default_mechanism(deployment="secure"), default_mechanism(deployment="federated")
        ('secure-rank-sum', 'rank-sum')
        >>> default_mechanism(needs_curve=True, deployment="secure")
        'secure-histogram'
    """
    deployment = Deployment(deployment)
    auc_only = is_roc_auc(curve, summation_method) and not needs_curve
    if deployment is Deployment.SECURE:
        return "secure-rank-sum" if auc_only else "secure-histogram"
    if not auc_only:
        return "histogram"
    if deployment is Deployment.CENTRAL and delta is not None:
        return "auc-only"
    return "rank-sum"


def get_mechanism(
    name: str,
    *,
    epsilon: float | None,
    num_thresholds: int,
    delta: float | None = None,
    num_clients: int | None = None,
    **options: Any,
) -> CountMechanism:
    """Builds a mechanism by name; ``epsilon=None`` always means no noise (``none``).

    ``num_clients`` is the number of shares for secure mechanisms and ignored by the others
    (every caller may pass it), except that a mechanism that releases only one holder's AUC
    (``auc-only``) refuses more than one client (``rank-sum`` takes them: its release over
    clients adds each client's own noise, with the global ranks); a secure mechanism given a
    ``delta`` and no ``family`` uses the Skellam family. Other ``options`` go to the constructor. Raises ``ValueError`` for
    an unknown name: nothing falls back to "no noise".
    """
    from dpauc_tf.privacy.statement import check_epsilon

    spec = mechanism_spec(name)
    # secure-rank-sum sums its noise shares; rank-sum over clients is its local-noise
    # release from the summed counts (release_over_clients: the global ranks, K draws)
    summable = spec.capabilities.secure or spec.load().releases_from_summed_counts
    if spec.capabilities.releases == "auc" and num_clients not in (None, 1) and not summable:
        raise ValueError(
            f"mechanism {name!r} releases one AUC from one data holder's counts, "
            f"got num_clients={num_clients}: its releases cannot be summed over clients; "
            "for several clients use 'secure-rank-sum' (secure aggregation) or 'rank-sum' "
            "(local noise per client)"
        )
    if check_epsilon(epsilon) is None:
        if options:
            raise ValueError(f"options {sorted(options)} need a noisy mechanism (epsilon given)")
        return mechanism_class("none")(None, num_thresholds)
    if spec.capabilities.protects == "nothing":
        raise ValueError(f"mechanism {name!r} adds no noise: pass epsilon=None with it")
    if spec.capabilities.secure:
        if num_clients is not None:
            options.setdefault("num_clients", num_clients)
        if delta is not None:
            options.setdefault("family", "skellam")
    cls = spec.load()
    options = parse_options(name, options)
    return cls(epsilon=epsilon, num_thresholds=num_thresholds, delta=delta, **options)


def option_type(name: str, option: str) -> OptionType:
    """The declared type of ``option`` of mechanism ``name``: the entry's own declaration,
    else `OPTION_TYPES`, else the type of the constructor's default (``"any"`` when
    the default is ``None``)."""
    spec = mechanism_spec(name)
    if option in spec.options:
        return spec.options[option]
    if option in OPTION_TYPES:
        return OPTION_TYPES[option]
    parameter = inspect.signature(spec.load().__init__).parameters.get(option)
    default = None if parameter is None else parameter.default
    if _is_bool(default):
        return BOOL
    if isinstance(default, int):
        return OptionType("int")
    if isinstance(default, float):
        return OptionType("float")
    if isinstance(default, str):
        return OptionType("text")
    return OptionType("any")


def parse_options(name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The options of mechanism ``name``, each parsed by its declared type
    ([`OptionType`][]); ``ValueError`` naming an unknown option or a value that does not
    parse (one line: the option and what it accepts).

        >>> parse_options("tree-histogram", {"public_scores": "False", "budget": "uniform"})
        {'public_scores': False, 'budget': 'uniform'}
        >>> parse_options("histogram", {"positive_rate": 1e-300})
        Traceback (most recent call last):
        ...
        dpauc_tf.mechanisms.option_types.OptionValueError: mechanism 'histogram': option positive_rate must be a finite number in [1e-06, 0.999999] (outside it one class would get less than a millionth of the budget), got 1e-300
    """
    known = mechanism_options(name)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(
            f"mechanism {name!r} takes no option {', '.join(map(repr, unknown))}; "
            f"its options: {', '.join(known) or 'none'}"
        )
    parsed = {}
    for option, value in options.items():
        try:
            parsed[option] = option_type(name, option).parse(option, value)
        except OptionValueError as error:
            raise OptionValueError(f"mechanism {name!r}: {error}") from None
    return parsed


def check_mechanism_options(
    name: str, options: Mapping[str, Any] | None, *, entry: str, num_clients: str
) -> dict[str, Any]:
    """The ``mechanism_options`` an entry point was given, parsed ([`parse_options`][]);
    a key that an argument of the entry point sets is refused, naming that argument.

    Every Python entry point that takes ``mechanism_options`` (``dpauc_tf.federated.evaluate``,
    ``dpauc_tf.flower.evaluate``, ``dpauc_tf.beam.PrivateAUC``) calls this once, so that
    ``{"num_clients": 1000}`` cannot size the secure shares differently per backend.

    Args:
      name: the mechanism.
      options: the mapping given (``None``: no option).
      entry: the entry point, as the message names it.
      num_clients: what sets the number of shares there (e.g. ``"secure_shares="``).

    Examples:
        >>> check_mechanism_options("secure-histogram", {"num_clients": 1000},
        ...                         entry="dpauc_tf.flower.evaluate", num_clients="secure_shares=")
        Traceback (most recent call last):
        ...
        ValueError: dpauc_tf.flower.evaluate: mechanism_options cannot set num_clients; it is set by secure_shares=
    """
    options = dict(options or {})
    reserved = {**RESERVED_OPTIONS, "num_clients": num_clients}
    for key in options:
        if key in reserved:
            raise ValueError(
                f"{entry}: mechanism_options cannot set {key}; it is set by {reserved[key]}"
            )
    mechanism_spec(name)  # an unknown name raises here, naming the choices
    if not options:
        return options
    return parse_options(name, options)


def mechanism_options(name: str) -> tuple[str, ...]:
    """The keyword options a mechanism's constructor takes besides ``epsilon``,
    ``num_thresholds`` and ``delta`` (what ``get_mechanism(name, ..., **options)`` accepts).

        >>> "positive_rate" in mechanism_options("histogram")
        True
    """
    cls = mechanism_spec(name).load()
    parameters = inspect.signature(cls.__init__).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        raise TypeError(f"{cls.__name__}.__init__ must name its options (no **kwargs)")
    common = {"self", "epsilon", "num_thresholds", "delta"}
    return tuple(
        p.name
        for p in parameters
        if p.name not in common
        and p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )


def require(mechanism: CountMechanism, capability: str) -> CountMechanism:
    """Returns ``mechanism`` if it has ``capability``; raises ``ValueError`` saying why not."""
    if capability not in _REFUSALS:
        raise ValueError(f"unknown capability {capability!r}; known: {sorted(_REFUSALS)}")
    if not getattr(mechanism.capabilities, capability):
        action, reason = _REFUSALS[capability]
        raise ValueError(f"mechanism {mechanism.name!r} cannot {action}: {reason}")
    return mechanism


def describe_mechanisms(*, capabilities: bool = False) -> list[dict[str, Any]]:
    """One dict per registered mechanism: name and summary (CLI help: no class is loaded),
    and with ``capabilities=True`` its [`Capabilities`][] fields too (docs; loads the
    classes)."""
    return [
        {
            "name": name,
            "summary": spec.summary,
            **(dataclasses.asdict(spec.capabilities) if capabilities else {}),
        }
        for name, spec in sorted(MECHANISMS.items())
    ]


def mechanisms_markdown() -> str:
    """The registry as a Markdown table (``docs/mechanisms.md`` holds this exact table).

    Regenerate with ``python -m dpauc_tf.mechanisms.registry``.
    """
    columns = [
        ("protects", "protects"),
        ("secure", "secure sum"),
        ("weights", "sample weights"),
        ("xla", "XLA"),
        ("keras_metric", "Keras metric"),
        ("fed_eval", "build_fed_eval"),
        ("federated", "TFF evaluate"),
        ("releases", "releases"),
    ]

    def cell(value: Any) -> str:
        if isinstance(value, bool):
            return "yes" if value else "-"
        return str(value)

    header = "| name | summary | " + " | ".join(title for _, title in columns) + " |"
    rule = "|" + "---|" * (len(columns) + 2)
    rows = [
        f"| `{row['name']}` | {row['summary']} | "
        + " | ".join(cell(row[key]) for key, _ in columns)
        + " |"
        for row in (
            {**row, "weights": MECHANISMS[row["name"]].capabilities.weights}
            for row in describe_mechanisms(capabilities=True)
        )
    ]
    return "\n".join([header, rule, *rows])


def options_markdown() -> str:
    """The declared option types as a Markdown table (``docs/mechanisms.md`` holds it)."""
    users: dict[str, list[str]] = {}
    for spec in BUILTIN_MECHANISMS:
        for option in mechanism_options(spec.name):
            users.setdefault(option, []).append(spec.name)
    rows = [
        f"| `{option}` | {OPTION_TYPES[option].accepted()} | "
        + ", ".join(f"`{n}`" for n in users.get(option, []))
        + " |"
        for option in sorted(OPTION_TYPES)
    ]
    return "\n".join(["| option | accepts | mechanisms |", "|---|---|---|", *rows])


if __name__ == "__main__":  # pragma: no cover
    print(mechanisms_markdown())
    print()
    print(options_markdown())
