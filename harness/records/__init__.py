"""What a run leaves behind: the run record and the benchmark record, their one codec, store and versions."""
