"""Serialize and send: DataFrames -> ILP bytes -> a QuestDB server or a no-op sink, measured."""
