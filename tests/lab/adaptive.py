#!/usr/bin/python3
"""Lab helper for tests/lab/adaptive.sh (an adaptive new-connection limit with a real server).

Subcommands (standard library only):
  serve ADDR PORT BACKLOG CPU_MS SECONDS OUT
        python ThreadingHTTPServer (HTTP/1.1, keep-alive), listen backlog BACKLOG (socketserver's
        request_queue_size), CPU_MS of this thread's CPU burnt per request (as adaptive_signals.py
        does). Prints "ready"; serves until SECONDS elapsed or SIGTERM/SIGUSR1; then writes OUT:
        every response it completed, [time, client address].
  keepalive HOST PORT RATE SECONDS OUT SRC...
        one keep-alive connection from each SRC address, opened and used once before the run
        (prints "ready"); on SIGUSR1 each makes RATE requests a second on its connection for
        SECONDS s. Request i is due at go + i/RATE; it succeeds when its response is in within
        3 s of when it was due (a request still waiting for the previous one is late, and counted
        by its due time). A request that fails closes the connection and the next one reconnects
        (counted). Writes OUT: per client the requests [due, outcome, seconds from due].
  client HOST PORT RATE SECONDS TIMEOUT OUT SRC
        open loop from SRC: RATE new connections a second (evenly spaced) for SECONDS s, each one
        GET with a TIMEOUT s deadline (connect included); OUT: [start, outcome, seconds].
  sample STATS OUT SECONDS
        reads floodgate's --stats file every 0.25 s (floodgate rewrites it atomically every
        --stats-interval) and keeps each new reading of the first rule: [time, limit_per_s,
        passed, dropped, adaptive{}]; until SECONDS elapsed or SIGTERM; writes OUT.
"""
import asyncio
import http.server
import json
import os
import signal
import socket
import sys
import threading
import time


# ---------------------------------------------------------------------------------------------
# server

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    cpu_s = 0.002
    body = b"<html><body>" + b"floodgate lab page " * 20 + b"</body></html>\n"
    done = []  # (time, client address), appended by the handler threads (list.append: atomic)

    def do_GET(self):
        end = time.thread_time() + self.cpu_s
        x = 0
        while time.thread_time() < end:  # burn this thread's CPU (counted against the cgroup)
            for i in range(200):
                x += i * i
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)
        self.wfile.flush()
        Handler.done.append((time.time(), self.client_address[0]))

    def log_message(self, *a):
        pass


def cmd_serve(addr, port, backlog, cpu_ms, seconds, out):
    Handler.cpu_s = float(cpu_ms) / 1000.0

    class Server(http.server.ThreadingHTTPServer):
        request_queue_size = int(backlog)
        daemon_threads = True
        block_on_close = False

        def handle_error(self, request, client_address):
            pass  # clients that gave up (reset, broken pipe) are expected under overload

    stopping = []
    for s in (signal.SIGTERM, signal.SIGUSR1):
        signal.signal(s, lambda *_: stopping.append(1))
    srv = Server((addr, int(port)), Handler)
    srv.timeout = 0.2
    print("ready", flush=True)
    deadline = time.time() + float(seconds)
    while time.time() < deadline and not stopping:  # bounded
        srv.handle_request()
    srv.server_close()
    with open(out, "w") as f:
        json.dump({"responses": Handler.done}, f)
    print(f"served {len(Handler.done)}", flush=True)
    os._exit(0)  # the daemon threads of clients still connected: not waited for


# ---------------------------------------------------------------------------------------------
# clients

def request(host):
    return f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()


async def read_response(r):
    """One HTTP/1.1 response with Content-Length; True when it is a 200."""
    head = await r.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    await r.readexactly(length)
    return head.startswith(b"HTTP/1.1 200")


async def keepalive_one(host, port, src, rate, seconds, go, ready, conn):
    reconnects = 0

    async def connect():
        return await asyncio.wait_for(
            asyncio.open_connection(host, port, local_addr=(src, 0)), 3)

    r, w = await connect()
    w.write(request(host))  # once before the run: the connection is in use before the change
    await w.drain()
    await asyncio.wait_for(read_response(r), 3)
    ready.append(src)
    await go.wait()
    t0 = time.time()
    out = []
    for i in range(int(rate * seconds)):
        due = t0 + i / rate
        if due > time.time():
            await asyncio.sleep(due - time.time())
        outcome = "ok"
        try:
            left = due + 3 - time.time()
            if left <= 0:
                raise TimeoutError
            if w is None:
                reconnects += 1
                r, w = await asyncio.wait_for(
                    asyncio.open_connection(host, port, local_addr=(src, 0)), left)
            w.write(request(host))
            await w.drain()
            ok = await asyncio.wait_for(read_response(r), due + 3 - time.time())
            outcome = "ok" if ok else "bad"
        except (TimeoutError, asyncio.TimeoutError):
            outcome = "timeout"
        except (OSError, asyncio.IncompleteReadError, ValueError) as e:
            outcome = "err:" + e.__class__.__name__
        if outcome != "ok" and w is not None:
            w.close()
            w = None
        out.append((due, outcome, time.time() - due))
    if w is not None:
        w.close()
    conn[src] = {"requests": out, "reconnects": reconnects}


async def keepalive_main(host, port, rate, seconds, out, srcs):
    go = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, go.set)
    ready, conn = [], {}
    tasks = [asyncio.create_task(keepalive_one(host, port, s, rate, seconds, go, ready, conn))
             for s in srcs]
    for _ in range(100):  # bounded: 10 s for the connections
        if len(ready) == len(srcs) or any(t.done() for t in tasks):
            break
        await asyncio.sleep(0.1)
    if len(ready) != len(srcs):
        print(f"keepalive: only {len(ready)} of {len(srcs)} connected", flush=True)
        for t in tasks:
            if t.done() and t.exception():
                print(f"keepalive: {t.exception()!r}", flush=True)
        return 1
    print("ready", flush=True)
    await asyncio.wait(tasks, timeout=seconds + 60)  # bounded: SIGUSR1 within a minute
    with open(out, "w") as f:
        json.dump({"rate": rate, "clients": conn}, f)
    return 0


async def client_main(host, port, rate, seconds, timeout, out, src):
    loop = asyncio.get_running_loop()
    res = []

    async def one():
        start = time.time()
        w = None
        outcome = "ok"
        try:
            async with asyncio.timeout(timeout):
                r, w = await asyncio.open_connection(host, port, local_addr=(src, 0))
                w.write(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
                await w.drain()
                outcome = "ok" if await read_response(r) else "bad"
        except TimeoutError:
            outcome = "timeout"
        except (OSError, asyncio.IncompleteReadError, ValueError) as e:
            outcome = "err:" + e.__class__.__name__
        finally:
            if w is not None:
                w.close()
        res.append((start, outcome, time.time() - start))

    m0 = loop.time()
    t0 = time.time()
    tasks = []
    for i in range(int(rate * seconds)):
        delay = m0 + i / rate - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one()))
    await asyncio.wait(tasks, timeout=timeout + 2)
    res.sort()
    with open(out, "w") as f:
        json.dump({"t0": t0, "rate": rate, "connections": res}, f)
    print(f"client: {len(res)} connections", flush=True)


# ---------------------------------------------------------------------------------------------
# floodgate's stats

def cmd_sample(stats, out, seconds):
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    rows, last = [], None
    deadline = time.time() + float(seconds)
    print("ready", flush=True)
    while time.time() < deadline and not stopping:  # bounded
        try:
            st = os.stat(stats)
            key = (st.st_mtime_ns, st.st_ino)
            if key != last:
                with open(stats) as f:
                    j = json.load(f)
                last = key
                r = j["rules"][0]
                rows.append({"t": st.st_mtime_ns / 1e9, "read": time.time(),
                             "limit_per_s": r.get("limit_per_s"), "passed": r.get("passed"),
                             "dropped": r.get("dropped"), "adaptive": r.get("adaptive")})
        except (OSError, ValueError, KeyError, IndexError):
            pass
        time.sleep(0.25)
    with open(out, "w") as f:
        json.dump({"samples": rows}, f)


def main():
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "serve":
        cmd_serve(*a)
    elif cmd == "keepalive":
        sys.exit(asyncio.run(keepalive_main(a[0], int(a[1]), float(a[2]), float(a[3]), a[4],
                                            a[5:])))
    elif cmd == "client":
        asyncio.run(client_main(a[0], int(a[1]), float(a[2]), float(a[3]), float(a[4]), a[5],
                                a[6]))
    elif cmd == "sample":
        cmd_sample(*a)
    else:
        sys.exit(f"adaptive.py: unknown command {cmd}")


if __name__ == "__main__":
    main()
