"""The commands, one module each: what ``python -m harness`` runs, and what tests and notebooks call."""
