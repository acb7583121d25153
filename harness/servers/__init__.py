"""Servers started natively: QuestDB from a server jar (a release's, the pinned QWP server's, or one of the user's) on
the Java its classes need, and the no-op sink (socat; a Python process of its own where socat is missing, for a run's
private sink)."""
