"""Test and measurement helpers that ship with argus (no test framework needed to import them).

``argus.testing.latency_server.LatencyServer``: a loopback OpenAI-compatible server with a set
latency, schema-valid deterministic answers and fault injection, for throughput benchmarks and
rate-limit tests.
"""
