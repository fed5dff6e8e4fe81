"""Privacy at Beam's and TFMA's doors: a TFMA config without ``epsilon`` is refused (it
released the exact AUC); the exact AUC is asked for explicitly and its output says so
(infinite epsilon); the label column is refused as a slice (each slice's size was an exact
class count under a stated epsilon)."""

from __future__ import annotations

import base64
import math

import numpy as np
import pytest

pytest.importorskip("apache_beam")
pytest.importorskip("tensorflow_model_analysis")

import apache_beam as beam
from tensorflow_model_analysis.api import model_eval_lib

from dpauc_tf.beam import PrivateAUC, tfma_metric
from dpauc_tf.mechanisms.registry import default_mechanism
from tests.helpers.tfma import metric_config, write_examples

T = 20
N = 120


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    rng = np.random.default_rng(0)
    scores = rng.random(N).astype(np.float32)
    labels = (rng.random(N) < scores).astype(np.float32)
    return write_examples(tmp_path_factory.mktemp("tfma") / "examples.tfrecord", scores, labels)


def _run(config, path, out):
    result = model_eval_lib.run_model_analysis(
        eval_config=config, data_location=path, output_path=str(out)
    )
    return {key: metrics[""][""] for key, metrics in result.slicing_metrics}


@pytest.mark.parametrize("options", [{"mechanism": "histogram"}, {}, {"num_thresholds": T}])
def test_a_config_without_epsilon_is_refused(options, examples, tmp_path):
    """Before: {"mechanism": "histogram"} gave the exact AUC (0.80165 for 0.80167 on the
    issue's data), with no epsilon in the output."""
    with pytest.raises(ValueError, match='names no "epsilon"'):
        tfma_metric.DPAUCMetric(**options)
    with pytest.raises(ValueError, match='names no "epsilon"'):
        _run(metric_config(options), examples, tmp_path)


@pytest.mark.parametrize(
    "options", [{"epsilon": None}, {"mechanism": "none", "epsilon": None}, {"mechanism": "none"}]
)
def test_the_exact_auc_is_asked_for_and_its_output_says_it_is_not_private(
    options, examples, tmp_path
):
    """As dpauc evaluate: "epsilon": null, or the mechanism "none" (--mechanism none)."""
    ((_, values),) = _run(
        metric_config({**options, "num_thresholds": T}), examples, tmp_path
    ).items()
    assert 0.0 <= values["dpauc"]["doubleValue"] <= 1.0
    for key in ("dpauc_epsilon", "dpauc_epsilon_total"):  # before: absent
        assert math.isinf(float(values[key]["doubleValue"])), values
    assert _mechanism(values) == "none"


def _mechanism(values) -> str:
    return base64.b64decode(values["dpauc_mechanism"]["bytesValue"]).decode()


def test_a_private_config_still_states_its_epsilon(examples, tmp_path):
    config = metric_config({"epsilon": 0.5, "num_thresholds": T})
    ((_, values),) = _run(config, examples, tmp_path).items()
    assert values["dpauc_epsilon"]["doubleValue"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("options", "expected"),
    [({}, default_mechanism()), ({"delta": 1e-6}, "auc-only"), ({"mechanism": "histogram"}, None)],
)
def test_tfma_follows_the_one_default_rule_and_names_it(options, expected, examples, tmp_path):
    """Issue 34: TFMA defaulted to histogram where DPAUC and dpauc evaluate default to
    rank-sum, and its output named no mechanism."""
    expected = expected or options["mechanism"]
    config = metric_config({"epsilon": 1.0, "num_thresholds": T, **options})
    ((_, values),) = _run(config, examples, tmp_path).items()
    assert _mechanism(values) == expected
    assert tfma_metric.DPAUCMetric(epsilon=1.0, **options).get_config()["mechanism"] == expected


def test_beam_follows_the_one_default_rule():
    """PrivateAUC states its deployment (central per slice, federated per client) and takes
    the registry's default for it, whatever that is measured to be."""
    assert default_mechanism() == "rank-sum"
    assert PrivateAUC(epsilon=1.0).spec.mechanism == default_mechanism()  # before: histogram
    assert PrivateAUC(epsilon=1.0, delta=1e-6).spec.mechanism == "auc-only"
    federated = default_mechanism(deployment="federated")
    assert PrivateAUC(epsilon=1.0, per_client=True).spec.mechanism == federated
    client = PrivateAUC(epsilon=1.0, slicing=[()], client_column="client")
    assert client.spec.mechanism == federated
    assert PrivateAUC("tree-histogram", epsilon=1.0).spec.mechanism == "tree-histogram"


def test_beam_results_name_the_default_mechanism():
    from apache_beam.testing.util import assert_that, equal_to

    with beam.Pipeline() as pipeline:
        names = (
            pipeline
            | beam.Create(_batches())
            | PrivateAUC(epsilon=1.0, slicing=[()])
            | beam.Map(lambda r: (r.mechanism, r.to_dict()["mechanism"]))
        )
        assert_that(names, equal_to([("rank-sum", "rank-sum")]))


@pytest.mark.parametrize("slicing", [[("label",)], [(), ("label",)], [("label", "group")]])
def test_tfma_refuses_a_slice_on_the_label(slicing, examples, tmp_path):
    with pytest.raises(ValueError, match="slices on the label column 'label'"):
        _run(metric_config({"epsilon": 1.0, "num_thresholds": T}, slicing), examples, tmp_path)


def _batches():
    rng = np.random.default_rng(1)
    n = 200
    labels = (rng.random(n) < 0.3).astype(np.float64)
    return [
        {
            "score": rng.random(n),
            "label": labels,
            "group": rng.integers(0, 2, n),
            "copy": labels.copy(),
        }
    ]


@pytest.mark.parametrize("slicing", [[("label",)], [(), ("label",)], [("group", "label")]])
def test_private_auc_refuses_a_slice_on_the_label(slicing):
    """Before: PrivateAUC(slicing=[("label",)]) ran, and each slice's num_examples was the
    exact number of negatives / positives under a stated epsilon_total of 1."""
    with pytest.raises(ValueError, match="slices on the label column 'label'"):
        PrivateAUC("histogram", epsilon=1.0, num_thresholds=T, slicing=slicing)
    with pytest.raises(ValueError, match="slices on the label column 'y'"):
        PrivateAUC("histogram", epsilon=1.0, num_thresholds=T, slicing=[("y",)], label_column="y")


def test_private_auc_refuses_the_label_as_client_column():
    with pytest.raises(ValueError, match="client column is the label column"):
        PrivateAUC(
            "secure-histogram", epsilon=1.0, num_thresholds=T, slicing=[()],
            client_column="label",
        )  # fmt: skip


def test_a_label_free_slice_column_still_runs():
    """Refusal by name only: a column that copies the labels is not detected from its values
    (that check would itself depend on the labels); docs/beam.md says so."""
    transform = PrivateAUC("histogram", epsilon=1.0, num_thresholds=T, slicing=[("group",)])
    with beam.Pipeline() as pipeline:
        sizes = (
            pipeline
            | beam.Create(_batches())
            | transform
            | beam.Map(lambda r: (r.slice_key, r.num_examples))
        )
        from apache_beam.testing.util import assert_that

        def check(found):
            assert sorted(key for key, _ in found) == [(("group", 0),), (("group", 1),)]
            assert sum(size for _, size in found) == 200

        assert_that(sizes, check)
