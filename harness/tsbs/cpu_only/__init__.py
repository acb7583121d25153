"""TSBS's ``cpu-only`` use case: one table, ``cpu``."""
