"""The TSBS query benchmark: run TSBS's queries against QuestDB and check every answer."""
