"""One run of a command: its session (the record written however it ends), the tables it fills, its limits,
the bench run's options and phases."""
