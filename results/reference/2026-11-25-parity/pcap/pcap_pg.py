"""Segments of PGWire on port 8812 from a pcap: (t, dir, conn, len, first bytes)."""
import struct, sys
def segments(path, port=8812):
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    nano = magic == 0xa1b23c4d
    linktype = struct.unpack("<I", data[20:24])[0]
    off = 24; out = []
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack("<IIII", data[off:off+16]); off += 16
        pkt = data[off:off+incl]; off += incl
        t = sec + frac / (1e9 if nano else 1e6)
        l2 = 14 if linktype == 1 else (16 if linktype == 113 else 4)
        ip = pkt[l2:]
        if not ip or ip[0] >> 4 != 4: continue
        ihl = (ip[0] & 15) * 4; total = struct.unpack(">H", ip[2:4])[0]
        tcp = ip[ihl:]; sport, dport = struct.unpack(">HH", tcp[:4]); doff = (tcp[12] >> 4) * 4
        plen = total - ihl - doff
        if plen <= 0: continue
        payload = tcp[doff:]
        d = "c2s" if dport == port else "s2c"
        conn = sport if d == "c2s" else dport
        out.append((t, d, conn, plen, payload[:64]))
    return out
if __name__ == "__main__":
    segs = segments(sys.argv[1])
    t0 = segs[0][0]
    for s in segs[: int(sys.argv[2]) if len(sys.argv) > 2 else 40]:
        print(f"{(s[0]-t0)*1e3:9.3f} {s[1]} {s[2]} {s[3]:6} {s[4][:40]!r}")
