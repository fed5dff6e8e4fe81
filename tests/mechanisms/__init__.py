"""Tests of mechanisms."""
