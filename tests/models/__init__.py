"""Tests of models."""
