"""One asyncpg connection to the native QuestDB (127.0.0.1:8812), made and closed, asyncpg's default TLS
request (sslmode=prefer) and none (ssl=False) in turn, three times each: [client CPU ms, wall ms] of
the connect."""
import asyncio, time, asyncpg, sys
async def one(ssl):
    c0, t0 = time.process_time(), time.perf_counter()
    kw = {} if ssl == "default" else {"ssl": False}
    c = await asyncpg.connect(host="127.0.0.1", port=8812, user="admin", password="quest", database="qdb", statement_cache_size=0, **kw)
    c1, t1 = time.process_time(), time.perf_counter()
    await c.close()
    return (c1 - c0) * 1000, (t1 - t0) * 1000
async def main():
    for ssl in ["default", False, "default", False, "default", False]:
        print(ssl, ["%.2f" % x for x in await one(ssl)])
asyncio.run(main())
