"""Tests of hostile."""
