"""Servers started natively: the QuestDB release jar and the no-op sink (socat; a Python process of its own
where socat is missing, for a run's private sink)."""
