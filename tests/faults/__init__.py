"""Fault injection: each test states the fault it injects and what must hold afterwards."""
