"""TSBS's ``iot`` use case: a fleet of trucks, two tables, the iot query types."""
