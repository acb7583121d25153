import sys, threading, time, tracemalloc
tracemalloc.start(3)
snaps = {}
def snapper():
    time.sleep(60); snaps[1] = tracemalloc.take_snapshot()
    time.sleep(150); snaps[2] = tracemalloc.take_snapshot()
    stats = snaps[2].compare_to(snaps[1], "traceback")
    with open("/tmp/tm-diff.txt", "w") as out:
        out.write(f"traced now {tracemalloc.get_traced_memory()[0]/2**20:.1f} MiB\n")
        for stat in stats[:25]:
            out.write(f"{stat.size_diff/1024:.0f} KiB, count {stat.count_diff}\n")
            for line in stat.traceback.format()[-6:]:
                out.write("   " + line + "\n")
threading.Thread(target=snapper, daemon=True).start()
from harness.cli import main
sys.argv = ["harness"] + sys.argv[1:]
main()
