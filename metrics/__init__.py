"""Scoring functions with textual feedback (structural checks, judges, gold matching). See issue: metrics."""
