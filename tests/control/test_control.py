#!/usr/bin/python3
"""Control-plane integration test: `floodgate run` on virtual ports with continuous traffic,
`floodctl daemon` and the `floodctl` CLI, as an operator would use them.

Traffic: net_pcap replays a small trace forever (infinite_rx) on two RX queues, one per worker;
passed frames go to net_null. Every source sends millions of packets a second, so the rules
use rates of 1 or 2 per hour: within this test (minutes) a source whose burst is spent is
admitted nothing more, unless a reload hands it a fresh burst. That makes "no fresh burst"
an exact check. The rules (counts independent of floodgate's code):

  dns  udp/53 from 198.18.1.1, 1/h burst 10, key /32: passes its burst on each of the 2
       cores before the merge catches up: between 10 and 21 packets in all (README bound
       b + (N-1)(b + ceil(L/T)) with b = 10, N = 2, L << T), then never again.
  web  tcp/80 from 198.18.2.0/24, 10^9/s: never refuses.
  ntp  udp/123 from 198.18.3.1, 1/h burst 5: between 5 and 11 passed.

Prints TAP; needs root (DPDK) and builds nothing. Usage: test_control.py BUILD_DIR
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import re
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frames  # noqa: E402

BUILD = os.path.abspath(sys.argv[1])
FLOODGATE = os.path.join(BUILD, "dataplane", "floodgate")
FLOODCTL = os.path.join(BUILD, "control", "floodctl")
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEADLINE_S = 60  # longest any one condition is waited for

results = []


def check(ok, what, detail=""):
    results.append(bool(ok))
    print(("ok" if ok else "not ok") + " %d - %s" % (len(results), what))
    if not ok and detail:
        for line in str(detail).splitlines():
            print("#   " + line)
    sys.stdout.flush()
    return ok


def wait_until(condition, what, timeout=DEADLINE_S):
    """Polls condition() until it holds; a bounded wait for a state, not a timed sleep."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError("timed out waiting for " + what)


RULES = """\
# line 1
table: {{ entries_per_core: 65536 }}
block: [{block}]
rules:
{extra}  - name: {first}
    match: {{ proto: {first_proto}, {first_match} }}
    limit: {{ rate: {first_rate}, burst: {first_burst} }}
  - name: web
    match: {{ proto: tcp, src: 198.18.2.0/24 }}
    limit: {{ rate: 1000000000/s, burst: 1048576 }}
  - name: ntp
    match: {{ proto: udp, dst_port: 123 }}
    key: {{ ipv4: {ntp_key} }}
    limit: {{ rate: 1/h, burst: 5 }}
"""


def rules_text(dns_rate="1/h", ntp_key=32, block="198.19.255.0/24", extra=""):
    return RULES.format(block=block, first="dns", first_proto="udp", first_match="dst_port: 53",
                        first_rate=dns_rate, first_burst=10, ntp_key=ntp_key, extra=extra)


V1 = rules_text()
# A new rule first (every other rule moves down one place), dns at 2/h (same key: state
# kept), a block prefix more.
V2 = rules_text(dns_rate="2/h", block="198.19.0.0/16",
                extra="  - name: extra\n    match: { proto: udp, dst_port: 9999 }\n"
                      "    limit: { rate: 5/s, burst: 5 }\n")
V3 = rules_text(ntp_key=24)  # ntp re-keyed: its state starts afresh
BAD = V1.replace("rate: 1/h, burst: 10", "rate: 10/q, burst: 10")  # on line 7


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


class DataplaneLink:
    """One connection to the dataplane's control socket, one JSON line each way."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.buf = b""

    def ask(self, request):
        self.sock.sendall((json.dumps(request) + "\n").encode())
        while b"\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("dataplane closed the control connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

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


def metrics_endpoint_addresses(work):
    """--metrics: a missing host is loopback, names resolve, other addresses are logged, bad
    ones refused. Daemons of their own, without a dataplane."""
    nowhere = os.path.join(work, "no-dataplane.sock")

    def start(name, metrics):
        sock = os.path.join(work, name + ".sock")
        log_path = os.path.join(work, name + ".log")
        p = subprocess.Popen([FLOODCTL, "--socket", sock, "daemon", "--dataplane", nowhere,
                              "--metrics", metrics], stdout=open(log_path, "w"),
                             stderr=subprocess.STDOUT)
        ctl = Floodctl(sock)
        wait_until(lambda: p.poll() is not None or ctl.run("-j", "status")[1].startswith("{"),
                   "the daemon with --metrics %s" % metrics)
        return p, ctl, log_path

    def stop(p):
        if p.poll() is None:
            p.terminate()
            p.wait(timeout=30)

    p, ctl, _ = start("metrics-noport", ":0")
    try:
        # The exit status does not depend on the format: a dataplane that is down is 1.
        text_code, text_out, _ = ctl.run("status")
        json_code, json_out, _ = ctl.run("-j", "status")
        check(text_code == 1 and json_code == 1 and "DOWN" in text_out and
              json.loads(json_out)["dataplane_up"] is False,
              "status with the dataplane down exits 1 in text and in JSON (%d, %d)" %
              (text_code, json_code), text_out + json_out)
        watched = subprocess.run([FLOODCTL, "--socket", ctl.socket, "watch", "--count", "1"],
                                 capture_output=True, text=True, timeout=60)
        check(watched.returncode == 1 and
              watched.stderr.startswith("floodctl: watch: the dataplane is down"),
              "watch with the dataplane down says so and exits 1", watched.stderr)
        bound = listening_tcp(p.pid) if p.poll() is None else []
        port = bound[0][1] if bound else 0
        check(len(bound) == 1 and bound[0][0] == "127.0.0.1" and port != 0,
              "--metrics :0 listens on 127.0.0.1 only (/proc/net/tcp: %s)" % bound)
        said = json.loads(ctl.run("-j", "status")[1])["daemon"]["metrics"] if p.poll() is None else None
        check(said == "127.0.0.1:%d" % port, "and status says so: %s" % said)
    finally:
        stop(p)

    p, ctl, _ = start("metrics-localhost", "localhost:0")
    try:
        up = p.poll() is None
        bound = listening_tcp(p.pid) if up else []
        body = ""
        if len(bound) == 1:
            body = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % bound[0][1],
                                          timeout=30).read().decode()
        check(up and bound and bound[0][0] == "127.0.0.1" and
              "floodgate_dataplane_up 0" in body.splitlines(),
              "--metrics localhost:0 resolves and serves on 127.0.0.1 (%s)" % bound,
              "exit %s" % p.poll())
    finally:
        stop(p)

    p, ctl, log_path = start("metrics-any", "0.0.0.0:0")
    try:
        bound = listening_tcp(p.pid) if p.poll() is None else []
    finally:
        stop(p)
    with open(log_path) as f:
        log = f.read()
    check(len(bound) == 1 and bound[0][0] == "0.0.0.0" and "reachable from other hosts" in log,
          "--metrics 0.0.0.0:0, written out, listens on every interface and logs that it is "
          "reachable from other hosts (%s)" % bound, log)

    refused = []
    for bad in ("127.0.0.1:99999", "127.0.0.1", "::1:9417", "127.0.0.1:http"):
        sock = os.path.join(work, "metrics-bad.sock")
        p = subprocess.Popen([FLOODCTL, "--socket", sock, "daemon", "--dataplane", nowhere,
                              "--metrics", bad], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:  # it took the address and serves: not refused
            p.kill()
            out, err = p.communicate()
        if not (p.returncode == 2 and "--metrics '%s'" % bad in err):
            refused.append((bad, p.returncode, err.strip()))
    check(not refused, "bad --metrics addresses are refused as usage errors (exit 2), naming "
          "--metrics", refused)


ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def watch_on_terminal(ctl, key, cols=80, rows=24, frames_wanted=3):
    """floodctl watch on a pseudo-terminal of cols x rows; after frames_wanted frames sends
    key. Returns (exit code, the last whole frame as text lines, raw output)."""
    import fcntl
    import pty
    import select
    import struct
    import termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    # A session of its own with the terminal as its controlling one, as a login shell has it:
    # Ctrl-C there is SIGINT to watch.
    p = subprocess.Popen([FLOODCTL, "--socket", ctl.socket, "watch", "--interval", "0.5"],
                         stdin=slave, stdout=slave, stderr=slave, close_fds=True,
                         start_new_session=True,
                         preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
                         env=dict(os.environ, LANG="C.UTF-8", LC_ALL="C.UTF-8"))
    os.close(slave)
    out = b""

    def read_for(seconds):
        nonlocal out
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the terminal
                    return
                if not chunk:
                    return
                out += chunk
                if key is not None and out.count(b"\x1b[H") > frames_wanted:
                    return

    read_for(DEADLINE_S)  # until frames_wanted whole frames (or the deadline)
    if p.poll() is None:
        os.write(master, key)
    try:
        code = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        code = None
    read_for(1)
    os.close(master)
    parts = out.split(b"\x1b[H")
    last = parts[-2] if len(parts) > 2 else b""  # the last frame drawn whole before the key
    lines = [ANSI.sub("", line).rstrip("\r") for line in last.decode(errors="replace").split("\n")]
    return code, [line for line in lines if line.strip()], out


def live_view(ctl, work):
    """floodctl watch as an operator meets it: over a terminal of 80x24 (SSH's default),
    then piped, then as JSON; what it shows checked against floodctl -j stats."""
    code, lines, raw = watch_on_terminal(ctl, b"q")
    stats = ctl.json("stats")["stats"]
    version = ctl.json("status")["dataplane"]["ruleset"]["version"]
    check(code == 0 and raw.endswith(b"\x1b[?25h\x1b[?1049l"),
          "watch: q quits with exit 0 and gives the terminal back (exit %s)" % code,
          repr(raw[-80:]))
    width = max((len(line) for line in lines), default=0)
    check(lines and width <= 80 and len(lines) <= 24,
          "watch: the frame fits 80x24 (%d lines, widest %d)" % (len(lines), width),
          "\n".join(lines))
    header = next((i for i, line in enumerate(lines) if line.startswith("RULE")), len(lines))
    end = next((i for i, line in enumerate(lines) if line.startswith("TOP REFUSED")), len(lines))
    rows = {line.split()[0]: line.split() for line in lines[header + 1:end] if line.split()}
    check(set(rows) == {"dns", "web", "ntp"}, "watch: a row for each rule", "\n".join(lines))
    table = stats["table"]
    check(any("table %d of %d keys" % (table["occupancy"], table["capacity"]) in line
              for line in lines),
          "watch: the table's occupancy as floodctl -j stats has it (%d of %d)" %
          (table["occupancy"], table["capacity"]), "\n".join(lines))
    check(any("ruleset v%d " % version in line for line in lines) and
          any("2 workers" in line for line in lines),
          "watch: ruleset version %d and 2 workers" % version, "\n".join(lines))
    # dns spent its burst long ago and web refuses nothing: both read exactly 0 per second.
    dns, web = rows.get("dns", []), rows.get("web", [])
    def positive(text):  # "8.40M", "1.08k", "12": a rate above 0
        m = re.fullmatch(r"(\d+(?:\.\d+)?)[kMGT]?", text)
        return m is not None and float(m.group(1)) > 0
    check(len(dns) >= 5 and dns[2] == "0" and positive(dns[3]) and
          len(web) >= 5 and web[3] == "0" and positive(web[1]),
          "watch: dns passes 0/s and refuses, web refuses 0/s", "\n".join(lines))
    top = [r for r in stats["rules"] if r["name"] == "dns"][0]["top_refused"][0]["source"]
    check(any(line.split()[:2] == ["dns", top] for line in lines[end + 1:]),
          "watch: dns's top refused source %s, as floodctl -j stats has it" % top,
          "\n".join(lines))
    code, lines, raw = watch_on_terminal(ctl, b"\x03", frames_wanted=1)
    check(code == 0 and raw.endswith(b"\x1b[?25h\x1b[?1049l"),
          "watch: Ctrl-C quits with exit 0 and gives the terminal back (exit %s)" % code)
    # Not a terminal: plain lines, no escape codes; --count bounds it.
    p = subprocess.run([FLOODCTL, "--socket", ctl.socket, "watch", "--count", "2", "--interval",
                        "0.2"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 0 and "\x1b" not in p.stdout and
          p.stdout.count("floodgate watch") == 2 and "rule" not in p.stderr,
          "watch piped: 2 frames of plain lines with --count 2", p.stdout + p.stderr)
    p = subprocess.run([FLOODCTL, "--socket", ctl.socket, "-j", "watch", "--count", "2",
                        "--interval", "0.2"], capture_output=True, text=True, timeout=60)
    frames = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    check(p.returncode == 0 and len(frames) == 2 and frames[0]["rates"] is None and
          frames[1]["rates"]["interval_s"] > 0 and
          [r["name"] for r in frames[1]["rates"]["rules"]] == ["dns", "web", "ntp"],
          "watch -j: a JSON object per frame, rates from the second on", p.stdout[:2000])


def cli_behaviour(ctl, work, prefix):
    """The CLI the way a new user tries it: no-ops say so, errors name what was typed, each
    command's usage alone, JSON with the same content and exit status as text."""
    before = ctl.json("status")["dataplane"]["ruleset"]["version"]
    code, out, err = ctl.run("rules", "load", os.path.join(work, "v3.yaml"))
    after = ctl.json("status")["dataplane"]["ruleset"]["version"]
    check(code == 0 and "no change" in out and after == before,
          "reloading the running file is a no-op that says so (version stays %d)" % before,
          out + err)
    code, out, err = ctl.run("rule", "dns", "enforce")
    check(code == 0 and "already enforce, no change" in out and
          ctl.json("status")["dataplane"]["ruleset"]["version"] == before,
          "switching a rule to the mode it has changes nothing and says so", out + err)

    code, out, err = ctl.run("block", "add", "198.19.8.0/24")
    code2, out2, err2 = ctl.run("allow", "add", "198.19.8.0/24")
    check(code == 0 and code2 == 0 and
          "note: allow 198.19.8.0/24 replaces the block override on it" in out2,
          "allow add over a block override says it replaces it", out2 + err2)
    blocks = ctl.json("block", "list")["overrides"]
    allows = ctl.json("allow", "list")["overrides"]
    check(blocks == [] and [o["prefix"] for o in allows] == ["198.19.8.0/24"],
          "-j block list holds blocks only, -j allow list allows only", (blocks, allows))
    ctl.run("allow", "del", "198.19.8.0/24")

    code, out, err = ctl.run("block", "add", "10.0.0.1/8")
    check(code == 2 and "block add 10.0.0.1/8: host bits are set" in err and
          "field" not in err and "block add PREFIX" in err and "daemon --config" not in err,
          "a bad prefix is named as typed, with the block command's usage only", err)
    code, out, err = ctl.run("watch", "--rule", "nosuch", "--count", "1")
    check(code == 1 and 'no rule named "nosuch"' in err, "watch --rule of no rule says so", err)
    code, out, err = ctl.run("watch", "--bogus")
    check(code == 2 and "unknown option --bogus" in err, "watch: an unknown option is named", err)
    code, out, err = ctl.run("top", "--bogus")
    check(code == 2 and "top [--rule NAME]" in err and "block add" not in err,
          "a usage error prints that command's usage only", err)

    code, out, err = ctl.run("-j", "rules", "check", os.path.join(work, "bad.yaml"))
    reply = json.loads(out) if out.startswith("{") else {}
    check(code == 1 and reply.get("ok") is False and reply.get("line") == 7 and
          reply.get("field") == "rules[0].limit.rate" and ":7: rules[0].limit.rate" in
          reply.get("error", ""), "-j rules check BAD carries the error, line and field", out)

    shown = ctl.json("rules", "show")
    dns = shown["rules"][0]
    ntp = shown["rules"][2]
    check(dns["match"] == {"proto": "udp", "dst_port": [{"from": 53, "to": 53}]} and
          dns["limit"]["rate"] == "1/h" and dns["limit"]["burst"] == 10 and
          dns["key"] == {"kind": "src", "ipv4": 32, "ipv6": 64} and
          ntp["key"]["ipv4"] == 24 and shown["block"] == ["198.19.255.0/24"],
          "-j rules show gives the match, key and limit as fields", shown["rules"])

    # dns has one source, so its summary is exact: shown as a plain number (the ranged form is
    # tests/test_stats_text.cpp's). The count moves between the two readings: at least the
    # JSON's.
    top = ctl.json("top", "--rule", "dns", "-n", "1")["top"][0]["top_refused"][0]
    code, out, err = ctl.run("top", "--rule", "dns", "-n", "1")
    shown = out.splitlines()[1].split() if code == 0 and len(out.splitlines()) > 1 else []
    check(top["error"] == 0 and shown[:2] == [top["source"], "refused"] and len(shown) == 3 and
          shown[2].isdigit() and int(shown[2]) >= top["count"],
          "top shows an exact count as a number (%s; JSON count %d, error %d)" %
          (" ".join(shown), top["count"], top["error"]), out)

    version = subprocess.run([FLOODCTL, "--version"], capture_output=True, text=True, timeout=30)
    fg_version = subprocess.run([FLOODGATE, "--version"], capture_output=True, text=True,
                                timeout=30)
    check(version.returncode == 0 and re.fullmatch(r"floodctl \d+\.\d+\.\d+\n", version.stdout)
          and fg_version.returncode == 0 and
          fg_version.stdout == version.stdout.replace("floodctl", "floodgate"),
          "--version on both binaries: %s" % version.stdout.strip())
    helped = subprocess.run([FLOODGATE, "--help"], capture_output=True, text=True, timeout=30)
    run_help = subprocess.run([FLOODGATE, "run", "--help"], capture_output=True, text=True,
                              timeout=30)
    no_sep = subprocess.run([FLOODGATE, "run", "--no-huge", "--config", "x.yaml"],
                            capture_output=True, text=True, timeout=30)
    check(helped.returncode == 0 and "  run " in helped.stdout and "  replay " in helped.stdout and
          run_help.returncode == 0 and "--stats-interval" in run_help.stdout and
          "EAL options (before --)" in run_help.stdout and no_sep.returncode == 2 and
          len(no_sep.stderr.strip().splitlines()) == 1 and "after `--`" in no_sep.stderr,
          "floodgate --help lists run and replay, run --help its own options, a missing -- is "
          "one line", helped.stdout + run_help.stdout + no_sep.stderr)

    unknown = telemetry(prefix, "/floodgate/rule,nosuch")
    check(unknown == {"error": 'no rule named "nosuch"'},
          "telemetry /floodgate/rule of an unknown rule says so", unknown)


def main():
    work = tempfile.mkdtemp(prefix="fg-control-")
    prefix = "fgctl%d" % os.getpid()
    dp_sock = os.path.join(work, "dataplane.sock")
    ctl_sock = os.path.join(work, "floodctl.sock")
    for name, text in (("v1.yaml", V1), ("v2.yaml", V2), ("v3.yaml", V3), ("bad.yaml", BAD)):
        with open(os.path.join(work, name), "w") as f:
            f.write(text)
    trace = [frames.udp4("198.18.1.1", "198.18.255.1", 4000, 53)] * 4
    trace += [frames.tcp4("198.18.2.%d" % i, "198.18.255.1", 4000 + i, 80, 0x10) for i in (1, 2, 3)]
    trace += [frames.udp4("198.18.3.1", "198.18.255.1", 4000, 123)] * 2
    trace += [frames.udp6("2001:db8:1::1", "2001:db8:ff::1", 4000, 5353)]  # matches no rule
    frames.write_pcap(os.path.join(work, "trace.pcap"), trace)

    stats_file = os.path.join(work, "stats.json")
    # Two workers time-share CPU 1 so that CPU 0 is left for this test, the main lcore and
    # the daemon on a 2-core machine.
    cpu = 1 if os.cpu_count() > 1 else 0
    dataplane_cmd = [
        FLOODGATE, "run", "--lcores", "0@0,1@%d,2@%d" % (cpu, cpu), "--no-huge", "--no-pci",
        "--no-shconf", "-m", "1024", "--file-prefix", prefix,
        "--vdev", "net_pcap0,rx_pcap=%s,rx_pcap=%s,infinite_rx=1,tx_pcap=/dev/null,"
                  "tx_pcap=/dev/null" % ((os.path.join(work, "trace.pcap"),) * 2),
        "--vdev", "net_null0,no-rx=1", "--",
        "--config", os.path.join(work, "v1.yaml"), "--control", dp_sock, "--stats", stats_file,
        "--stats-interval", "1"]
    dp_log = open(os.path.join(work, "dataplane.log"), "w")
    dataplane = subprocess.Popen(dataplane_cmd, stdout=dp_log, stderr=subprocess.STDOUT,
                                 cwd=work)
    daemon_cmd = [FLOODCTL, "--socket", ctl_sock, "daemon", "--config",
                  os.path.join(work, "v1.yaml"), "--dataplane", dp_sock,
                  "--metrics", "127.0.0.1:0"]
    daemon_log = open(os.path.join(work, "daemon.log"), "a")
    daemon = subprocess.Popen(daemon_cmd, stdout=daemon_log, stderr=subprocess.STDOUT)
    ctl = Floodctl(ctl_sock)
    try:
        scenario(ctl, work, prefix, dp_sock, ctl_sock, dataplane, dataplane_cmd, daemon,
                 daemon_cmd, daemon_log, stats_file)
    except Exception as e:  # a failed wait or an unexpected reply ends the run, counted
        check(False, "scenario ran to the end", repr(e))
    finally:
        for p in (daemon, dataplane):
            if p.poll() is None:
                p.kill()
                p.wait()
        for p in (globals().get("restarted"),):
            if p is not None and p.poll() is None:
                p.kill()
        subprocess.run(["rm", "-rf", "/var/run/dpdk/" + prefix])
    if not all(results):
        for log in ("dataplane.log", "daemon.log"):
            print("# --- " + log)
            with open(os.path.join(work, log)) as f:
                for line in f.read().splitlines()[-40:]:
                    print("# " + line)
    else:
        subprocess.run(["rm", "-rf", work])
    print("1..%d" % len(results))
    return 0 if all(results) else 1


def scenario(ctl, work, prefix, dp_sock, ctl_sock, dataplane, dataplane_cmd, daemon, daemon_cmd,
             daemon_log, stats_file):
    global restarted
    status = wait_until(lambda: (lambda s: s if s["dataplane_up"] else None)(
        ctl.json("status")) if ctl.run("status")[0] == 0 else None,
        "the daemon to reach the dataplane")
    check(status["dataplane_up"] and status["dataplane"]["workers"] == 2,
          "status: dataplane up with 2 workers", status)
    check(status["dataplane"]["ruleset"]["version"] == 1 and
          status["dataplane"]["ruleset"]["origin"] == "startup",
          "daemon adopted the dataplane's startup rules (same as --config): version 1", status)
    # Rates from the first reply on: since the dataplane's start until two samples exist.
    first = status
    code, out, err = ctl.run("status")
    since = "over the dataplane's first" if "over the dataplane's first" in out else "over the last"
    check(first["rates"] is not None and "packets" in first["rates"] and code == 0 and
          since in out and "rule dns" in out and "none yet" not in out,
          "status shows rates from its first reply (that one %s; the next %s)" %
          ("since the start" if first["rates_since_start"] else "over the last second", since),
          out + err)

    # The flood settles: every core has spent the burst and the merge has spread it.
    dns0 = wait_until(lambda: (lambda r: r if r["refused"] > 200000 else None)(ctl.rule("dns")),
                      "dns to refuse")
    settled = wait_until(lambda: (lambda r: r if r["refused"] > dns0["refused"] + 200000 else None)(
        ctl.rule("dns")), "more dns refusals")
    passed0 = settled["passed"]
    check(10 <= passed0 <= 21, "dns passed its burst once per core at most (10..21): %d" % passed0)
    web0 = ctl.rule("web")
    ntp0 = ctl.rule("ntp")
    check(5 <= ntp0["passed"] <= 11, "ntp passed 5..11: %d" % ntp0["passed"])

    # Readings taken while both workers run flat out: every one must add up.
    link = DataplaneLink(dp_sock)
    readings, broken, moved, last = 2000, [], 0, None
    for _ in range(readings):
        reply = link.ask({"cmd": "stats"})
        bad = stats_invariants(reply["stats"])
        if bad and len(broken) < 5:
            broken.append(bad)
        moved += last is not None and reply["stats"]["packets"] != last
        last = reply["stats"]["packets"]
    link.close()
    check(not broken and moved >= readings // 2,
          "%d stats readings under traffic all keep the invariants (%d saw new packets)" %
          (readings, moved), broken)

    # Dry run: shows the change, applies nothing.
    code, out, err = ctl.run("rules", "load", os.path.join(work, "v2.yaml"), "--dry-run")
    check(code == 0 and "rule extra: added" in out and "dns: limit 1/h burst 10 -> 2/h burst 10"
          in out and "block + 198.19.0.0/16" in out and "dry run" in out,
          "rules load --dry-run shows the difference", out + err)
    check(ctl.json("status")["dataplane"]["ruleset"]["version"] == 1,
          "dry run changed nothing")

    # 40 reloads under traffic, alternating two files (rule positions and rates change).
    failures = []
    for i in range(40):
        code, out, err = ctl.run("rules", "load", os.path.join(work, "v2.yaml" if i % 2 == 0 else
                                                                "v1.yaml"))
        if code != 0:
            failures.append(err)
    status = ctl.json("status")["dataplane"]
    check(not failures and status["ruleset"]["version"] == 41 and status["reloads"]["ok"] == 40,
          "40 reloads under traffic applied (version 41)", failures or status)
    rules = ctl.json("rules", "show")
    check([r["name"] for r in rules["rules"]] == ["dns", "web", "ntp"] and
          all(r["state"] == "kept" for r in rules["rules"]),
          "every rule kept its state across the reloads", rules["rules"])

    before = ctl.rule("dns")
    after = wait_until(lambda: (lambda r: r if r["refused"] > before["refused"] + 200000 else None)(
        ctl.rule("dns")), "dns refusals after the reloads")
    check(after["passed"] == passed0,
          "no fresh burst: dns passed stayed %d across 40 reloads (now %d)" % (passed0,
                                                                             after["passed"]))
    web1 = ctl.rule("web")
    check(web1["refused"] == 0 and web1["passed"] > web0["passed"] and
          web1["matched"] == web1["passed"],
          "web: counters carried on, nothing refused (%d -> %d passed)" % (web0["passed"],
                                                                          web1["passed"]))

    # A bad file: refused with file, line and field; nothing changes.
    bad = os.path.join(work, "bad.yaml")
    code, out, err = ctl.run("rules", "load", bad)
    check(code == 1 and bad + ":7: rules[0].limit.rate" in err,
          "a bad file is refused naming file:line: field", err)
    code, out, err = ctl.run("rules", "check", bad)
    check(code == 1 and ":7: rules[0].limit.rate" in err, "rules check: exit 1 on a bad file", err)
    code, out, err = ctl.run("rules", "check", os.path.join(work, "v1.yaml"))
    check(code == 0 and "valid" in out, "rules check: exit 0 on a good file", out + err)
    check(ctl.json("status")["dataplane"]["ruleset"]["version"] == 41,
          "the bad file changed nothing (still version 41)")

    # Re-keying a rule starts its state afresh, as the diff warns.
    code, out, err = ctl.run("rules", "load", os.path.join(work, "v3.yaml"))
    check(code == 0 and "ntp: key ipv4 /32, ipv6 /64 -> ipv4 /24, ipv6 /64" in out,
          "re-keying ntp is shown in the diff", out + err)
    ntp1 = wait_until(lambda: (lambda r: r if r["refused"] > 100000 else None)(ctl.rule("ntp")),
                      "ntp refusals under its new key")
    check(5 <= ntp1["passed"] <= 11, "re-keyed ntp got one fresh burst (5..11): %d" %
          ntp1["passed"])

    # Shadow and back, one rule only.
    code, out, err = ctl.run("rule", "dns", "shadow")
    check(code == 0, "rule dns shadow", err)
    modes = {r["name"]: r["mode"] for r in ctl.json("rules", "show")["rules"]}
    check(modes == {"dns": "shadow", "web": "enforce", "ntp": "enforce"},
          "only dns switched to shadow", modes)
    wait_until(lambda: ctl.rule("dns")["shadow_refused"] > 100000, "dns shadow refusals")
    code, out, err = ctl.run("rule", "dns", "enforce")
    check(code == 0, "rule dns enforce", err)
    d1 = ctl.rule("dns")
    d2 = wait_until(lambda: (lambda r: r if r["refused"] > d1["refused"] + 200000 else None)(
        ctl.rule("dns")), "dns to refuse again")
    check(d2["passed"] == d1["passed"] and d2["shadow_refused"] == d1["shadow_refused"],
          "back in enforce, dns admits nothing (no fresh burst from shadow mode)", (d1, d2))

    # An override with a TTL blocks web's sources, then expires on its own.
    code, out, err = ctl.run("block", "add", "198.18.2.0/24", "--ttl", "2s")
    check(code == 0 and "198.18.2.0/24" in out, "block add --ttl 2s", out + err)
    b0 = ctl.json("stats")["stats"]["block_hits"]
    wait_until(lambda: ctl.json("stats")["stats"]["block_hits"] > b0 + 100000, "block hits")
    wait_until(lambda: not ctl.json("block", "list")["overrides"], "the override to expire", 30)
    w0 = ctl.rule("web")["matched"]
    wait_until(lambda: ctl.rule("web")["matched"] > w0 + 100000, "web traffic after expiry")
    check(ctl.json("status")["dataplane"]["overrides_expired"] == 1,
          "the expired override is gone and web passes again")

    # Hostile messages on both sockets: refused, logged, nobody crashes.
    hostile = [b"not json\n", b"[" * 100000 + b"\n", b"\xff\xfe\x00garbage\n", b"{}\n",
               b'{"cmd": 5}\n', b'{"cmd": "override_add", "list": "block", "prefix": 123}\n',
               b'{"cmd": "override_add", "list": "block", "prefix": "198.18.0.0/15", '
               b'"ttl_s": -5}\n',
               b'{"cmd": "override_add", "list": "both", "prefix": "198.18.0.0/15"}\n',
               b'{"cmd": "override_add", "list": "block", "prefix": "10.0.0.1/8"}\n',
               b'{"cmd": "load", "source": "x", "text": "rules: [[[["}\n',
               b'{"cmd": "mode", "rule": "nosuch", "mode": "shadow"}\n',
               b'{"cmd": "stats", "top": 1000000}\n', b'{"cmd": "reboot"}\n']
    replies_ok = True
    for path in (dp_sock, ctl_sock):
        for payload in hostile:
            reply = raw_request(path, payload)
            replies_ok &= reply is not None and json.loads(reply)["ok"] is False
        raw_request(path, b'{"cmd": "status"', read=False)  # half a line, then gone
        reply = raw_request(path, b"x" * (65 << 20))  # past the 64 MiB line limit
        replies_ok &= reply is not None and "too long" in reply
    check(replies_ok, "every hostile message got an error reply")
    check(dataplane.poll() is None and daemon.poll() is None, "both processes still run")
    status = ctl.json("status")["dataplane"]
    check(status["requests_refused"] >= len(hostile) and status["ruleset"]["overrides"] == 0,
          "the dataplane counted the refused requests and changed nothing", status)

    # Prometheus: scrape, parse with the reference parser, compare with floodctl's numbers.
    # The scrape is made while other clients hold connections: five that sent nothing, one
    # that sent half a request, one that asked and reads nothing. A server that serves one
    # connection at a time cannot answer it before it has closed those it accepted first.
    from prometheus_client.parser import text_string_to_metric_families
    metrics_addr = ctl.json("status")["daemon"]["metrics"]
    host, port = metrics_addr.rsplit(":", 1)
    idle = [socket.create_connection((host, int(port)), timeout=30) for _ in range(5)]
    half = socket.create_connection((host, int(port)), timeout=30)
    half.sendall(b"GET /metrics HTTP/1.1\r\nHost: floodgate\r\n")  # no blank line: unfinished
    deaf = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)  # before connect: a tiny window
    deaf.connect((host, int(port)))
    deaf.sendall(b"GET /metrics HTTP/1.1\r\nHost: floodgate\r\n\r\n" * 8)
    try:
        started = time.monotonic()
        body = urllib.request.urlopen("http://%s/metrics" % metrics_addr,
                                      timeout=30).read().decode()
        took_s = time.monotonic() - started  # shown, not asserted
        held = [still_open(c) for c in idle + [half]]
        check(all(held), "metrics: scraped (in %.3f s) while 5 idle connections and a half "
              "request stay open (%d of 6 open)" % (took_s, sum(held)))
    finally:
        for c in idle + [half, deaf]:
            c.close()
    code_404, _ = http_status("http://%s/nosuch" % metrics_addr)
    code_405, headers_405 = http_status("http://%s/metrics" % metrics_addr, "POST")
    check(code_404 == 404 and code_405 == 405 and "GET" in headers_405.get("Allow", ""),
          "metrics: another path is 404 (%s), another method 405 (%s)" % (code_404, code_405))
    families = {f.name: f for f in text_string_to_metric_families(body)}
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in families.values() for s in f.samples}
    version = ctl.json("status")["dataplane"]["ruleset"]["version"]
    check(samples.get(("floodgate_dataplane_up", ())) == 1, "metrics: floodgate_dataplane_up 1")
    check(samples.get(("floodgate_ruleset_version", ())) == version,
          "metrics: ruleset version %d" % version)
    dns_passed = ctl.rule("dns")["passed"]
    check(samples.get(("floodgate_rule_passed_total", (("rule", "dns"),))) == dns_passed,
          "metrics: floodgate_rule_passed_total{rule=\"dns\"} == floodctl stats (%d)" %
          dns_passed)
    check(samples.get(("floodgate_rule_refused_total", (("rule", "web"),))) == 0,
          "metrics: web refused 0")
    cores = [k for k in samples if k[0] == "floodgate_packets_total"]
    check(len(cores) == 2, "metrics: per-core packet counters for 2 cores", cores)
    check(all(families[n].documentation and families[n].type != "unknown" for n in families),
          "metrics: every family has HELP and TYPE")
    check(("floodgate_reloads_total", (("result", "ok"),)) in samples and
          ("floodgate_table_occupancy", (("core", "0"),)) in samples and
          ("floodgate_merge_max_lag_seconds", (("core", "1"),)) in samples,
          "metrics: reloads, table occupancy and merge lag present")
    # The reasons as the source lists them (FG_MALFORMED_REASONS), none excepted.
    with open(os.path.join(SRC, "dataplane", "api", "malformed.h")) as f:
        macro = re.search(r"#define FG_MALFORMED_REASONS\(X\)(.*?)\n\n", f.read(), re.S).group(1)
    listed = set(re.findall(r"X\((\w+)\)", macro)) - {"none"}
    reasons = {dict(k[1])["reason"] for k in samples if k[0] == "floodgate_malformed_by_reason_total"}
    check(listed and reasons >= listed,
          "metrics: every malformed reason listed from the first scrape, seen or not (%d)" %
          len(listed), sorted(listed - reasons))

    import grafana_queries
    queries, names, unknown = grafana_queries.check(
        os.path.join(SRC, "config", "grafana", "floodgate.json"), body)
    check(len(queries) > 50 and len(names) > 50 and not unknown,
          "metrics: every metric the Grafana dashboard's %d queries use (%d names) is exported" %
          (len(queries), len(names)), unknown)

    metrics_endpoint_addresses(work)

    # DPDK telemetry, through the tool DPDK ships.
    tool = subprocess.run(["/usr/bin/python3", "/usr/bin/dpdk-telemetry.py", "-f", prefix],
                          input="/floodgate/status\n/floodgate/rule,dns\n", capture_output=True,
                          text=True, timeout=60)
    check('"ruleset_version": %d' % version in tool.stdout and '"refused"' in tool.stdout,
          "dpdk-telemetry.py shows /floodgate/status and /floodgate/rule,dns", tool.stdout +
          tool.stderr)

    live_view(ctl, work)
    cli_behaviour(ctl, work, prefix)

    # The control plane dies; the dataplane filters on and expires an override by itself.
    code, out, err = ctl.run("block", "add", "198.19.7.0/24", "--ttl", "1s")
    check(code == 0, "block add 198.19.7.0/24 --ttl 1s", err)
    daemon.kill()
    daemon.wait()
    t0 = telemetry(prefix, "/floodgate/stats")
    dns_t0 = telemetry(prefix, "/floodgate/rule,dns")
    wait_until(lambda: telemetry(prefix, "/floodgate/overrides") == [],
               "the dataplane to expire the override with no daemon", 30)
    t1 = wait_until(lambda: (lambda s: s if s["rate_limited"] > t0["rate_limited"] + 200000
                             else None)(telemetry(prefix, "/floodgate/stats")),
                    "filtering with no daemon")
    dns_t1 = telemetry(prefix, "/floodgate/rule,dns")
    check(t1["packets"] > t0["packets"] and dns_t1["passed"] == dns_t0["passed"] and
          dns_t1["refused"] > dns_t0["refused"],
          "with the daemon killed the dataplane keeps filtering (dns passed stays %d)" %
          dns_t0["passed"])
    version_before = telemetry(prefix, "/floodgate/status")["ruleset_version"]

    # A restarted daemon reads the running state and carries on without pushing anything.
    restarted = subprocess.Popen(daemon_cmd, stdout=daemon_log, stderr=subprocess.STDOUT)
    status = wait_until(lambda: ctl.run("-j", "status")[0] == 0 and ctl.json("status"),
                        "the restarted daemon")
    rs = status["dataplane"]["ruleset"]
    check(rs["version"] == version_before and rs["origin"] == "floodctl" and
          rs["source"].endswith("v3.yaml"),
          "the restarted daemon adopted the running ruleset (version %d from v3.yaml)" %
          version_before, rs)
    check(ctl.rule("dns")["passed"] == dns_t1["passed"], "and dns still has no fresh burst")

    # Stop the dataplane: every received frame was decided and every passed one sent.
    code, out, err = ctl.run("allow", "add", "198.18.9.0/24", "--ttl", "1h")
    check(code == 0, "allow add 198.18.9.0/24 --ttl 1h", err)
    dataplane.send_signal(signal.SIGTERM)
    check(dataplane.wait(timeout=60) == 0, "the dataplane stops cleanly on SIGTERM")
    with open(stats_file) as f:
        final = json.load(f)
    d = final["ports"]["outside_to_inside"]
    check(d["rx"] == final["packets"] == final["passed"] + final["dropped"] and
          d["tx"] == final["passed"] and d["tx_failed"] == 0,
          "no frame lost: rx %d = decided %d = passed %d + dropped %d; tx %d" %
          (d["rx"], final["packets"], final["passed"], final["dropped"], d["tx"]))
    check(final["merge"]["records_lost"] == 0, "no merge record lost")
    with open(os.path.join(work, "dataplane.log")) as f:
        log = f.read()
    intervals = re.findall(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\] over (\d+\.\d\d) s: "
                           r"outside rx (\d+) pps", log, re.M)
    check(len(intervals) >= 3 and all(float(t) > 0 and int(rx) > 0 for t, rx in intervals) and
          re.search(r"^  rule dns +matched", log, re.M) and "outside rx %d:" % final["packets"]
          not in log,
          "--stats-interval 1 printed %d timestamped lines of rates, per rule too" %
          len(intervals))

    # The dataplane comes back on its startup file; the daemon applies again what was changed
    # through it: the last loaded file and the override, with what is left of its hour.
    second = dataplane_cmd[:]
    second[second.index("--stats") + 1] = stats_file + ".2"
    again = subprocess.Popen(second, stdout=open(os.path.join(work, "dataplane2.log"), "w"),
                             stderr=subprocess.STDOUT, cwd=work)
    try:
        status = wait_until(lambda: (lambda s: s if s["dataplane_up"] and s["dataplane"][
            "ruleset"]["origin"] == "floodctl" and s["dataplane"]["ruleset"]["overrides"] == 1
            else None)(ctl.json("status")), "the daemon to re-apply its changes")
        rs = status["dataplane"]["ruleset"]
        allow = ctl.json("allow", "list")["overrides"]
        check(rs["source"].endswith("v3.yaml") and len(allow) == 1 and
              allow[0]["prefix"] == "198.18.9.0/24" and 3000 < allow[0]["ttl_left_s"] <= 3600,
              "after a dataplane restart the daemon re-applied v3.yaml and the override", (rs,
                                                                                       allow))
    finally:
        again.send_signal(signal.SIGTERM)
        check(again.wait(timeout=60) == 0, "the second dataplane stops cleanly")
    restarted.terminate()
    check(restarted.wait(timeout=30) == 0, "the daemon stops cleanly on SIGTERM")


restarted = None

if __name__ == "__main__":
    sys.exit(main())
