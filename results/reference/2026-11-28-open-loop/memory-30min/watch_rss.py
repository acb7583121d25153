import psutil, sys, time
p = psutil.Process(int(sys.argv[1])); out = open(sys.argv[2], "w")
t0 = time.time()
while p.is_running():
    try:
        rss = p.memory_info().rss + sum(c.memory_info().rss for c in p.children(recursive=True))
    except psutil.NoSuchProcess:
        break
    out.write(f"{time.time()-t0:.0f} {rss/2**20:.1f}\n"); out.flush(); time.sleep(10)
