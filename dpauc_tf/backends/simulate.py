"""``simulate``: the releases drawn in this process ([`dpauc_tf.simulation`][]): from the
counts, or from the examples where there are clients or the mechanism transforms each
example."""

from __future__ import annotations

from dpauc_tf.backends import Backend, BackendName, EvaluationData


class SimulateBackend(Backend):
    """The releases of a spec drawn here, with NumPy and TensorFlow's samplers.

    Examples:
        >>> import numpy as np
        >>> from dpauc_tf.mechanisms.release import ReleaseSpec
        >>> spec = ReleaseSpec.make("none", epsilon=None, num_thresholds=3)
        >>> data = EvaluationData(pos=np.array([[0, 1, 1, 0]]), neg=np.array([[1, 1, 0, 0]]))
        >>> SimulateBackend().evaluate(spec, data).auc
        0.875
    """

    name = BackendName.SIMULATE

    def evaluate(
        self, spec, data: EvaluationData, *, repeats=1, confidence=None, ci_target="population"
    ):
        from dpauc_tf.simulation import simulate, simulate_examples

        transforms = spec.capabilities.transforms_data
        if data.client_ids is not None or transforms:
            what = (
                f"mechanism {spec.mechanism!r} (it transforms every example)"
                if transforms
                else "--clients"
            )
            examples = data.kept_examples(what)
            return simulate_examples(
                spec,
                examples.labels,
                examples.scores,
                spec.thresholds,
                examples.clients if data.client_ids is None else data.client_ids,
                data.num_clients,
                repeats=repeats,
                confidence=confidence,
                ci_target=ci_target,
            )
        return simulate(
            spec, data.pos, data.neg, repeats=repeats, confidence=confidence, ci_target=ci_target
        )
