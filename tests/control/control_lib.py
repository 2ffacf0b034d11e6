"""What the control test's parts share (tests/control/test_control.py, operator_checks.py): its
TAP output, bounded waits, the binaries of the build directory it is given, floodctl and the
control sockets as clients, and what /proc says of a process's sockets."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

# The test's one argument: the build directory (test_control.py BUILD_DIR).
BUILD = os.path.abspath(sys.argv[1])
FLOODGATE = os.path.join(BUILD, "dataplane", "floodgate")
FLOODCTL = os.path.join(BUILD, "control", "floodctl")
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEADLINE_S = 60  # longest any one condition is waited for

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tap import check, plan, results  # noqa: E402,F401  (tests/tap.py, for the parts)


def wait_until(condition, what, timeout=DEADLINE_S):
    """Polls condition() until it holds; a bounded wait for a state, not a timed sleep."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError("timed out waiting for " + what)


class Floodctl:
    def __init__(self, socket_path):
        self.socket = socket_path

    def run(self, *args):
        p = subprocess.run([FLOODCTL, "--socket", self.socket] + list(args),
                           capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def json(self, *args):
        code, out, err = self.run("-j", *args)
        # status exits 1 while the dataplane is down, with its reply all the same
        if code == 1 and args[:1] == ("status",) and out.startswith("{"):
            return json.loads(out)
        if code != 0:
            raise RuntimeError("floodctl %s: exit %d: %s" % (" ".join(args), code, err))
        return json.loads(out)

    def rule(self, name):
        for r in self.json("stats")["stats"]["rules"]:
            if r["name"] == name:
                return r
        raise KeyError(name)


def telemetry(prefix, command):
    """One DPDK telemetry request on the dataplane's v2 socket (what dpdk-telemetry.py does)."""
    path = "/var/run/dpdk/%s/dpdk_telemetry.v2" % prefix
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(10)
        s.connect(path)
        s.recv(65536)  # the greeting
        s.send(command.encode())
        return json.loads(s.recv(1 << 20).decode())[command.split(",")[0]]


def raw_request(path, payload, read=True):
    """Sends raw bytes on a control socket; returns the reply line or None."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(30)
        s.connect(path)
        try:
            s.sendall(payload)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server stopped reading (a line too long); its reply may still be there
        if not read:
            return None
        data = b""
        while not data.endswith(b"\n"):
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
        return data.decode(errors="replace")


def stats_invariants(stats):
    """The invariants every reading must keep (dataplane/api/stats.h); a list of broken ones."""
    broken = []

    def same(a, b, what):
        if a != b:
            broken.append("%s: %d != %d" % (what, a, b))

    for where, c in [("total", stats)] + [("core %d" % c["core"], c) for c in stats["cores"]]:
        same(c["packets"], c["passed"] + c["dropped"], where + " packets = passed + dropped")
        same(c["dropped"], c["malformed"] + c["block_hits"] + c["rate_limited"],
             where + " dropped = malformed + blocked + rate-limited")
    same(stats["malformed"], sum(stats["malformed_reasons"].values()), "malformed = sum of reasons")
    for field in ("packets", "passed", "dropped", "malformed", "rate_limited"):
        same(stats[field], sum(c[field] for c in stats["cores"]), "total %s = sum of cores" % field)
    port = stats["ports"]["outside_to_inside"]
    same(port["rx"], stats["packets"], "outside rx = packets")
    same(port["tx"], stats["passed"], "outside tx = passed")
    for r in stats["rules"]:
        same(r["matched"], r["passed"] + r["refused"] + r["overruled"],
             r["name"] + " matched = passed + refused + overruled")
    same(sum(r["refused"] for r in stats["rules"]), stats["rate_limited"],
         "sum of rules' refused = rate-limited (no rule removed yet)")
    return broken


def threads_of(pid):
    """Where each of a process's threads is, at once (a worker that does not answer a reading is
    stuck somewhere): state, kernel wait channel and stack, then gdb's backtraces where gdb is."""
    lines = []
    for tid in sorted(os.listdir("/proc/%s/task" % pid), key=int):
        task = "/proc/%s/task/%s" % (pid, tid)

        def read(name):
            try:
                with open(os.path.join(task, name)) as f:
                    return f.read().strip()
            except OSError as e:
                return "(%s)" % e.strerror
        lines.append("thread %s %s: state %s, wchan %s" % (
            tid, read("comm"), read("stat").rsplit(")", 1)[-1].split()[0], read("wchan")))
        lines += ["    " + line for line in read("stack").splitlines()]
    if shutil.which("gdb"):
        try:
            gdb = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex",
                                  "thread apply all bt 12"], capture_output=True, text=True,
                                 timeout=60)
            lines += [line for line in gdb.stdout.splitlines()
                      if line.startswith(("#", "Thread"))]
        except subprocess.TimeoutExpired:
            lines.append("gdb did not finish within 60 s")
    return "\n".join(lines)


class DataplaneLink:
    """One connection to a control socket (the dataplane's or the daemon's), one JSON line each
    way; a reply may be read later (send, then replied() or reply())."""

    def __init__(self, path, timeout=30):
        self.timeout = timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""

    def send(self, request):
        self.sock.sendall((json.dumps(request) + "\n").encode())

    def replied(self):
        """Whether a reply line has arrived, without waiting for one."""
        self.sock.setblocking(False)
        try:
            while b"\n" not in self.buf:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    break
                self.buf += chunk
        except BlockingIOError:
            pass
        finally:
            self.sock.settimeout(self.timeout)
        return b"\n" in self.buf

    def reply(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("the server closed the control connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def ask(self, request):
        self.send(request)
        return self.reply()

    def close(self):
        self.sock.close()


def listening_tcp(pid):
    """The TCP addresses process pid listens on, as (address, port), read from /proc rather
    than from what the process says about itself."""
    inodes = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            link = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue  # closed meanwhile
        if link.startswith("socket:["):
            inodes.add(link[len("socket:["):-1])
    found = []
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        with open("/proc/net/" + table) as f:
            next(f)  # the header
            for row in f:
                fields = row.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state != "0A" or inode not in inodes:  # 0A: TCP_LISTEN
                    continue
                addr_hex, port_hex = local.split(":")
                raw = bytes.fromhex(addr_hex)  # 32-bit words in host (little-endian) order
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                found.append((socket.inet_ntop(family, raw), int(port_hex, 16)))
    return found


def still_open(conn):
    """True while the server has neither closed nor reset conn (and sent it nothing)."""
    conn.setblocking(False)  # a socket with a timeout would wait for data first
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:
        return True  # nothing to read, connection up
    except OSError:
        return False


def http_status(url, method="GET"):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method,
                                                           data=b"x" if method == "POST"
                                                           else None), timeout=30) as r:
            return r.status, r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.headers


def finish(work, logs):
    """Ends a TAP run: after a failure the last 30 lines of each of WORK's LOGS that exist, else
    WORK removed; then the plan line. Returns the exit code."""
    if not all(results):
        for log in logs:
            path = os.path.join(work, log)
            if os.path.exists(path):
                print("# --- " + log)
                with open(path) as f:
                    for ln in f.read().splitlines()[-30:]:
                        print("# " + ln)
    else:
        subprocess.run(["rm", "-rf", work])
    return plan()
