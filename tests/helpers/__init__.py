"""What several test files share, in one place: distribution tests (``stats``), the command
line run in process (``cli``), score files (``scores``), which optional engines a world has
(``worlds``), the JAX subprocess (``jax``), TFMA's inputs (``tfma``) and where the real
Criteo rows live (``criteo``). Import a module from
here (``from tests.helpers.stats import discrete_laplace_pvalue``); never copy one."""
