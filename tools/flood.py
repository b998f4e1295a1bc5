#!/usr/bin/env python3
"""tools/flood.py — the connection floods of tools/bench_abuse.sh (docs/server.md, "Limits").

Opens IDLE connections that send nothing and TRICKLE connections that send one byte of a
request head a second, interleaved, from ADDRS addresses 127.0.0.2.. (the client sockets
bound to them); holds them for SECONDS while probing GET /healthz from 127.0.0.1 on a new
connection every INTERVAL seconds; prints one line:
  flood addrs A idle I trickle T probes N ok K p50_ms X p99_ms Y max_ms Z answered_503 M answered_408 L
Loopback only.
"""
import argparse, resource, socket, struct, time

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--addrs", type=int, default=1)
ap.add_argument("--idle", type=int, default=2000)
ap.add_argument("--trickle", type=int, default=1100)
ap.add_argument("--seconds", type=float, default=20)
ap.add_argument("--interval", type=float, default=0.05)
a = ap.parse_args()

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 16384), hard))

n = a.idle + a.trickle
every = n // a.trickle + 1 if a.trickle else 0
socks = []
for i in range(n):
    s = socket.socket()
    try:
        s.bind(("127.0.0.%d" % (2 + i % a.addrs), 0))
        s.connect(("127.0.0.1", a.port))
        s.setblocking(False)
    except OSError:
        s.close()
        s = None
    socks.append((s, bool(every) and i % every == 0, [0]))

HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200


failures = {}


def probe():
    t0 = time.monotonic()
    try:
        c = socket.create_connection(("127.0.0.1", a.port), timeout=5)
        c.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            d = c.recv(4096)
            if not d:
                break
            data += d
        c.close()
        ok = data.startswith(b"HTTP/1.1 200")
        if not ok:
            why = data[:12].decode("ascii", "replace") or "closed"
            failures[why] = failures.get(why, 0) + 1
    except OSError as e:
        ok = False
        failures[type(e).__name__] = failures.get(type(e).__name__, 0) + 1
    return ok, (time.monotonic() - t0) * 1000


lat, oks = [], 0
end = time.monotonic() + a.seconds
next_byte = 0
while time.monotonic() < end:
    now = time.monotonic()
    if now >= next_byte:
        for s, slow, pos in socks:
            if s and slow and pos[0] < len(HEAD):
                try:
                    if s.send(HEAD[pos[0]:pos[0] + 1]) == 1:
                        pos[0] += 1
                except OSError:
                    pass
        next_byte = now + 1.0
    ok, ms = probe()
    oks += ok
    lat.append(ms)
    time.sleep(a.interval)
answered = {}
for s, _, _ in socks:
    if not s:
        continue
    try:
        d = s.recv(64)
        if d.startswith(b"HTTP/1.1 "):
            st = int(d[9:12])
            answered[st] = answered.get(st, 0) + 1
    except (OSError, ValueError):
        pass
    # Reset, not closed: a closed socket waits in TIME_WAIT on its port, and
    # thousands of them a run leave later runs without ports on loopback.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
lat.sort()
q = lambda f: lat[min(len(lat) - 1, int(len(lat) * f))] if lat else 0
print("flood addrs %d idle %d trickle %d probes %d ok %d p50_ms %.1f p99_ms %.1f max_ms %.1f "
      "answered_503 %d answered_408 %d opened %d failures %s" %
      (a.addrs, a.idle, a.trickle, len(lat), oks, q(0.5), q(0.99), lat[-1] if lat else 0,
       answered.get(503, 0), answered.get(408, 0), sum(1 for s, _, _ in socks if s),
       ",".join("%s:%d" % kv for kv in sorted(failures.items())) or "none"))
