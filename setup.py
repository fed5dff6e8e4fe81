"""Setuptools entry point; all metadata lives in pyproject.toml."""

from setuptools import setup

setup()
