"""Optimization campaigns: GEPA over the programs, the quality–cost Pareto frontier, compiled artifacts."""
