# Sends the data as the tuning sweep measured it (harness tune).
import queue
import threading

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import questdb

CONF = 'tcp::addr=localhost:9009;protocol_version=2;'
PATH = '/tmp/od/trades-2m.parquet'
TABLE = 'trades_2m'
CHUNK_ROWS = 10000
WORKERS = 2
# Strings read as Arrow strings (pandas 2 would make Python objects of them, which hold the GIL).
ARROW_STRINGS = {pa.string(): pd.StringDtype('pyarrow'), pa.large_string(): pd.StringDtype('pyarrow')}


def pieces():
    """The data in DataFrames of at most CHUNK_ROWS rows, read a piece at a time."""
    for batch in pq.ParquetFile(PATH, pre_buffer=False).iter_batches(batch_size=CHUNK_ROWS):
        df = batch.to_pandas(types_mapper=ARROW_STRINGS.get)
        yield df


work = queue.Queue(maxsize=2 * WORKERS)  # a few pieces in flight, never the whole data
errors = []


def worker():
    # Each worker its own sender: a sender is not thread-safe.
    try:
        with questdb.Sender.from_conf(CONF) as sender:
            while (df := work.get()) is not None:
                sender.dataframe(df, table_name=TABLE, symbols=[], at='ts')
                sender.flush()
    except BaseException as error:
        errors.append(error)
        while work.get() is not None:  # keep taking pieces, so that the reader never waits for good
            pass


threads = [threading.Thread(target=worker) for _ in range(WORKERS)]
for thread in threads:
    thread.start()
for df in pieces():
    work.put(df)
for _ in threads:
    work.put(None)
for thread in threads:
    thread.join()
if errors:
    raise errors[0]

