"""Tests of io."""
