"""Options declared once, as dataclass fields: checked, grouped, and turned into typer commands."""
