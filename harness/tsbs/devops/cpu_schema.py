"""The fields of TSBS's cpu measurement (cpu-only's one table, devops's cpu table), in TSBS's order: what
the generator writes and the devops queries take the first N of. Light, so that the queries need not
import the generator."""

FIELD_COLUMNS = (
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
)
