"""The test suite, a package: shared helpers live in tests.helpers (see its docstring)."""
