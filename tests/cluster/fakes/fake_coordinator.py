#!/usr/bin/python3 -S
"""A fake work coordinator for tests/bookgen/test_worker.c and tools/bench_worker.sh.

    fake_coordinator.py --positions FILE --record FILE --port-file FILE
                        [--port P] [--state FILE] [--token T] [--script S]
                        [--limits JSON] [--retry-after S] [--lease-seconds S]

Speaks the worker side of the work protocol (docs/worker.md) on 127.0.0.1:
hands out leases from FILE (lines "KEY SFEN"), each position once, and then
answers 204 with Retry-After; records every request as one JSON line in the
--record file (appended, so a restarted fake adds to it):

  {"ev": "acquire", "t": time, "peer": port, "lease": id or null, "status": N,
   "keys": [...], "worker": ..., "engine": ..., "nps": ..., "max": N}
  {"ev": "submit", "t": ..., "peer": ..., "lease": id, "status": N, "body": {...}}
  {"ev": "abort", "t": ..., "peer": ..., "lease": id, "status": N}
  {"ev": "heartbeat", "t": ..., "peer": ..., "worker": ..., "leaving": bool, "status": 204}

--state FILE keeps the positions handed out and the leases, so a fake killed
and started again on the same --port goes on where it stopped (a coordinator
restart). --script "acquire=204*2,submit=503,submit=close,any=401,submit=exit"
makes the next requests to an endpoint misbehave, in order: 204 (no work,
Retry-After), 503/500 (with Retry-After for 503), close (the connection is
closed without an answer), 401, 400 (a refused body), exit (the process ends
at once, no answer), slow (answered normally, 1 s late: the request is
recorded, a lease granted, before the wait).
A request the script does not touch is answered normally.
"""
import json
import os
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import threading

A = {"positions": None, "record": None, "port-file": None, "port": "0", "state": None,
     "token": "secret-token", "script": "", "limits": '{"nodes": 300, "multipv": 2}',
     "retry-after": "1", "lease-seconds": "60"}
LOCK = threading.Lock()
S = {"next": 0, "leases": {}, "n": 0}
POSITIONS = []
SCRIPT = {}


def args():
    i = 1
    while i + 1 < len(sys.argv):
        A[sys.argv[i].lstrip("-")] = sys.argv[i + 1]
        i += 2


def save():
    if A["state"]:
        tmp = A["state"] + ".tmp"
        with open(tmp, "w") as f:
            json.dump(S, f)
        os.replace(tmp, A["state"])


def record(ev):
    ev["t"] = time.time()
    with open(A["record"], "a") as f:
        f.write(json.dumps(ev) + "\n")


def scripted(endpoint):
    for ep in (endpoint, "any"):
        q = SCRIPT.get(ep)
        if q:
            return q.pop(0)
    return None


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def setup(self):
        BaseHTTPRequestHandler.setup(self)
        # Headers and body go out in separate writes: without this, Nagle's
        # algorithm and the client's delayed ACK add 40 ms to every answer.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def answer(self, status, obj=None, retry=False):
        if getattr(self, "slow", False):
            time.sleep(1)
        body = b"" if obj is None else json.dumps(obj).encode()
        self.send_response(status)
        if retry:
            self.send_header("Retry-After", A["retry-after"])
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n) if n else b""
        parts = self.path.strip("/").split("/")
        if len(parts) < 3 or parts[0] != "v1" or parts[1] != "work":
            return self.answer(404, {"error": "no such endpoint"})
        ep = parts[2]
        lease = parts[3] if len(parts) > 3 else None
        ev = {"ev": ep, "peer": self.client_address[1], "lease": lease}
        with LOCK:
            act = scripted(ep)
            self.slow = act == "slow"
            if act == "exit":
                os._exit(0)
            if act == "close":
                self.close_connection = True
                ev["status"] = "close"
                record(ev)
                return
            if act in ("204", "503", "500", "401", "400"):
                ev["status"] = int(act)
                if raw:
                    ev["body"] = json.loads(raw.decode())
                record(ev)
                if act == "204":
                    return self.answer(204, None, True)
                return self.answer(int(act), {"error": "scripted " + act}, act == "503")
            if self.headers.get("Authorization") != "Bearer " + A["token"]:
                ev["status"] = 401
                record(ev)
                return self.answer(401, {"error": "unknown token"})
            try:
                body = json.loads(raw.decode()) if raw else {}
            except ValueError:
                ev["status"] = 400
                record(ev)
                return self.answer(400, {"error": "bad JSON"})
            if ep == "acquire":
                return self.acquire(ev, body)
            if ep == "heartbeat":
                ev.update({"worker": body.get("worker"), "leaving": body.get("leaving")})
                ev["status"] = 204
                record(ev)
                return self.answer(204)
            if ep in ("submit", "abort"):
                if lease not in S["leases"]:
                    ev["status"] = 404
                    record(ev)
                    return self.answer(404, {"error": "unknown lease"})
                if ep == "submit":
                    keys = set(S["leases"][lease])
                    for r in body.get("results", []):
                        if r.get("key") not in keys:
                            ev["status"] = 400
                            ev["body"] = body
                            record(ev)
                            return self.answer(400, {"error": "key not in lease"})
                    ev["body"] = body
                ev["status"] = 204
                record(ev)
                return self.answer(204)
            return self.answer(404, {"error": "no such endpoint"})

    def acquire(self, ev, body):
        ev.update({"worker": body.get("worker"), "engine": body.get("engine"),
                   "nps": body.get("nps"), "max": body.get("max")})
        mx = body.get("max")
        if not isinstance(mx, int) or mx < 1 or mx > 256 or not body.get("worker"):
            ev["status"] = 400
            record(ev)
            return self.answer(400, {"error": "bad acquire"})
        take = POSITIONS[S["next"]:S["next"] + mx]
        if not take:
            ev["status"] = 204
            record(ev)
            return self.answer(204, None, True)
        S["next"] += len(take)
        S["n"] += 1
        lid = "%016x" % (0x1000 + S["n"] + int(A["port"]) * 1000)
        S["leases"][lid] = [k for k, _ in take]
        save()
        ev.update({"status": 200, "lease": lid, "keys": S["leases"][lid]})
        record(ev)
        self.answer(200, {"lease": lid, "expires_in": int(A["lease-seconds"]),
                          "positions": [{"sfen": s, "key": k} for k, s in take],
                          "limits": json.loads(A["limits"])})


def main():
    args()
    with open(A["positions"]) as f:
        for line in f:
            line = line.strip()
            if line:
                k, s = line.split(" ", 1)
                POSITIONS.append((k, s))
    if A["state"] and os.path.exists(A["state"]):
        with open(A["state"]) as f:
            S.update(json.load(f))
    for item in filter(None, A["script"].split(",")):
        ep, act = item.split("=")
        count = 1
        if "*" in act:
            act, c = act.split("*")
            count = int(c)
        SCRIPT.setdefault(ep, []).extend([act] * count)
    ThreadingHTTPServer.allow_reuse_address = True
    srv = ThreadingHTTPServer(("127.0.0.1", int(A["port"])), H)
    srv.daemon_threads = True
    A["port"] = str(srv.server_address[1])
    tmp = A["port-file"] + ".tmp"
    with open(tmp, "w") as f:
        f.write(A["port"] + "\n")
    os.replace(tmp, A["port-file"])
    srv.serve_forever()


if __name__ == "__main__":
    main()
