"""The two tables of TSBS's ``iot`` use case and the truck catalogue they draw from: names, choices, column
order, SQL types. Importing it costs no numba, numpy or pandas, so a caller can ask for the schemas alone.

A truck carries eight tags in TSBS: five strings (name, fleet, driver, model, device_version) and three
numbers of its model (load_capacity, fuel_capacity, nominal_fuel_consumption, Go ``float32``). TSBS's
questdb/influx serializer prints only string tags as tags and the numeric ones as the first fields of the
line, so in QuestDB they are DOUBLE columns: that is how ``schemas()`` declares them.

Any of these values may be absent from a line (TSBS clears one tag in 1% of its entries and one field in
10%): tags are nullable SYMBOLs, fields nullable DOUBLE/LONG.
"""

from __future__ import annotations

from harness.tsbs.schema import TableSchema

READINGS, DIAGNOSTICS = "readings", "diagnostics"
TABLES = (READINGS, DIAGNOSTICS)  # TSBS's measurement order within an epoch

# The truck's tags in TSBS's order; a cleared tag is named by its index in this tuple (``NUMERIC_TAGS``
# follow ``STRING_TAGS``).
STRING_TAGS = ("name", "fleet", "driver", "model", "device_version")
NUMERIC_TAGS = ("load_capacity", "fuel_capacity", "nominal_fuel_consumption")
ALL_TAGS = STRING_TAGS + NUMERIC_TAGS

# Each table's fields in TSBS's order with the decimals TSBS keeps (``FloatPrecision``: the value is
# truncated toward zero to that many decimals); None marks a field printed as an integer (``status=1i``).
FIELDS = {
    READINGS: (("latitude", 5), ("longitude", 5), ("elevation", 0), ("velocity", 0), ("heading", 0),
               ("grade", 0), ("fuel_consumption", 1)),
    DIAGNOSTICS: (("fuel_state", 1), ("current_load", 0), ("status", None)),
}
# TSBS draws the index of a field to clear below the widest measurement's field count (readings: 7) and
# wraps it for narrower ones.
MAX_FIELD_COUNT = max(len(fields) for fields in FIELDS.values())

FLEETS = ("East", "West", "North", "South")
DRIVERS = ("Derek", "Rodney", "Albert", "Andy", "Seth", "Trish")
DEVICE_VERSIONS = ("v1.0", "v1.5", "v2.0", "v2.3")
# (model, load_capacity, fuel_capacity, nominal_fuel_consumption) with the capacities as TSBS prints its
# float32 values (shortest digits: all whole numbers).
MODELS = (("F-150", "2000", "200", "15"), ("G-2000", "5000", "300", "19"), ("H-2", "1500", "150", "12"))


TRUCK_NAME_PREFIX = "truck_"


def truck_name(truck: int) -> str:
    return f"{TRUCK_NAME_PREFIX}{truck}"


def schemas() -> list[TableSchema]:
    """``readings`` and ``diagnostics``: the five string tags as SYMBOL, the model's numbers and the
    measured values as DOUBLE, ``status`` as LONG, a designated ``timestamp``. ``name`` is the series tag,
    but (name, timestamp) does not key a row: a line whose name TSBS cleared shares it with others."""
    return [TableSchema(table, STRING_TAGS,
                        tuple((tag, "DOUBLE") for tag in NUMERIC_TAGS)
                        + tuple((field, "DOUBLE" if decimals is not None else "LONG")
                                for field, decimals in FIELDS[table]),
                        series_tags=("name",))
            for table in TABLES]
