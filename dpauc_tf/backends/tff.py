"""``tff``: every client's examples through TensorFlow Federated
([`dpauc_tf.federated.evaluate.evaluate_spec`][]: the spec itself, every repeat a TFF
round)."""

from __future__ import annotations

from dpauc_tf.backends import Backend, BackendName, EvaluationData


class TFFBackend(Backend):
    """A spec's releases as TFF rounds over the clients' examples.

    Examples:
        >>> TFFBackend.federated, TFFBackend.requires
        (True, ('tensorflow_federated', 'federated'))
    """

    name = BackendName.TFF
    federated = True
    requires = ("tensorflow_federated", "federated")

    @classmethod
    def check_installed(cls) -> None:
        """TFF runs in a world of its own: Python 3.11 with TensorFlow 2.14."""
        try:
            super().check_installed()
        except ImportError:
            from dpauc_tf.core.extras import install_hint

            raise ImportError(
                "--backend tff needs TensorFlow Federated, which runs on Python 3.11 with "
                f"TensorFlow 2.14: {install_hint('federated')} in a Python 3.11 environment "
                "of its own (it does not go with the keras3, beam, flower or spark extras)"
            ) from None

    def evaluate(
        self, spec, data: EvaluationData, *, repeats=1, confidence=None, ci_target="population"
    ):
        self.check_installed()
        from dpauc_tf.federated.evaluate import evaluate_spec

        return evaluate_spec(
            spec,
            data.client_partition("--backend tff"),
            repeats=repeats,
            confidence=confidence,
            ci_target=ci_target,
        )
