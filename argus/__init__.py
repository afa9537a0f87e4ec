"""ARGUS: source-grounded event knowledge graphs from employment-discrimination complaints."""

__version__ = "0.1.0"
