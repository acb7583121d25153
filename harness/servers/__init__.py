"""Servers started natively: the QuestDB release jar and the socat sink."""
