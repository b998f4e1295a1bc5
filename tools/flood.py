#!/usr/bin/env python3
"""tools/flood.py — the connection floods of tools/bench_abuse.sh (docs/notes/server.md,
"Limits").

Opens, interleaved, from ADDRS addresses 127.0.0.2.. (the client sockets bound to them):
IDLE connections that send nothing, TRICKLE connections that send one byte of a request
head a second, and SLOW_BODY connections that send a whole head (Content-Length: 16000)
and then one byte of the body a second. Holds them for SECONDS while probing GET /healthz
from 127.0.0.1 on a new connection every INTERVAL seconds. A flood connection the server
answers or closes is opened again (from the same address, of the same kind) after
RECONNECT seconds, so that the pressure stays (one refused at its connect, 503, is not). Prints one line:
  flood addrs A idle I trickle T slow_body B probes N ok K p50_ms X p99_ms Y max_ms Z
    answered_503 M answered_408 L held_max_s H held_to_end E opened O failures F
held_max_s is the longest any flood connection stayed open before the server answered or
closed it (by the client's clock, to within INTERVAL); held_to_end counts those still open
when the flood ended, which the server had not ended in SECONDS. Loopback only.
"""
import argparse, resource, selectors, socket, struct, time

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--addrs", type=int, default=1)
ap.add_argument("--idle", type=int, default=2000)
ap.add_argument("--trickle", type=int, default=1100)
ap.add_argument("--slow-body", type=int, default=0)
ap.add_argument("--seconds", type=float, default=20)
ap.add_argument("--interval", type=float, default=0.05)
ap.add_argument("--reconnect", type=float, default=1.0)
a = ap.parse_args()

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 16384), hard))

HEAD = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200
BODY_HEAD = b"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Length: 16000\r\n\r\n"
sel = selectors.DefaultSelector()
answered, held = {}, []
opened = 0


class Conn:
    def __init__(self, kind, addr):
        self.kind, self.addr, self.sock, self.pos, self.t0, self.again = kind, addr, None, 0, 0, 0

    def open(self, now):
        global opened
        s = socket.socket()
        try:
            s.bind(("127.0.0.%d" % self.addr, 0))
            s.connect(("127.0.0.1", a.port))
            s.setblocking(False)
            if self.kind == "slow_body":
                s.send(BODY_HEAD)
        except OSError:
            s.close()
            self.again = now + a.reconnect
            return
        opened += 1
        self.sock, self.pos, self.t0 = s, 0, now
        sel.register(s, selectors.EVENT_READ, self)

    def end(self, now, data):
        """The server answered (data) or closed the connection."""
        if data.startswith(b"HTTP/1.1 "):
            try:
                st = int(data[9:12])
                answered[st] = answered.get(st, 0) + 1
            except ValueError:
                pass
        held.append(now - self.t0)
        self.close()
        # Again later, unless refused at its connect (an attacker at its share
        # waits; one shed to make room for another comes back).
        refused = data.startswith(b"HTTP/1.1 503") and b"made room" not in data
        self.again = float("inf") if refused else now + a.reconnect

    def close(self):
        sel.unregister(self.sock)
        # Reset, not closed: a closed socket waits in TIME_WAIT on its port, and
        # thousands of them a run leave later runs without ports on loopback.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()
        self.sock = None

    def tick(self, now):
        """One more byte of a trickling head or a slow body."""
        if not self.sock or self.kind == "idle":
            return
        b = HEAD[self.pos:self.pos + 1] if self.kind == "trickle" else b"a"
        if not b:
            return
        try:
            if self.sock.send(b) == 1:
                self.pos += 1
        except OSError:
            self.end(now, b"")


kinds = ["idle"] * a.idle + ["trickle"] * a.trickle + ["slow_body"] * a.slow_body
# Interleaved, so that each address gets its share of every kind.
order = sorted(range(len(kinds)), key=lambda i: (i * 7919) % max(1, len(kinds)))
conns = [Conn(kinds[i], 2 + k % a.addrs) for k, i in enumerate(order)]
start = time.monotonic()
for c in conns:
    c.open(start)

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


def serve_events(timeout):
    for key, _ in sel.select(timeout):
        c = key.data
        try:
            d = c.sock.recv(512)
        except OSError:
            d = b""
        c.end(time.monotonic(), d)


lat, oks = [], 0
end = start + a.seconds
next_byte = 0
while time.monotonic() < end:
    now = time.monotonic()
    if now >= next_byte:
        for c in conns:
            if not c.sock and now >= c.again:
                c.open(now)
            else:
                c.tick(now)
        next_byte = now + 1.0
    serve_events(0)
    ok, ms = probe()
    oks += ok
    lat.append(ms)
    serve_events(a.interval)
now = time.monotonic()
to_end = 0
for c in conns:
    if c.sock:
        to_end += 1
        held.append(now - c.t0)
        c.close()
lat.sort()
q = lambda f: lat[min(len(lat) - 1, int(len(lat) * f))] if lat else 0
print("flood addrs %d idle %d trickle %d slow_body %d probes %d ok %d p50_ms %.1f p99_ms %.1f "
      "max_ms %.1f answered_503 %d answered_408 %d held_max_s %.1f held_to_end %d opened %d "
      "failures %s" %
      (a.addrs, a.idle, a.trickle, a.slow_body, len(lat), oks, q(0.5), q(0.99),
       lat[-1] if lat else 0, answered.get(503, 0), answered.get(408, 0),
       max(held) if held else 0, to_end, opened,
       ",".join("%s:%d" % kv for kv in sorted(failures.items())) or "none"))
