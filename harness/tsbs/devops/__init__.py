"""TSBS's ``devops`` use case: nine measurement tables, and the devops query types (cpu-only's too)."""
