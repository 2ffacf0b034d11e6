#!/usr/bin/python3
"""A protected store (issue 42, part 1), end to end: two boxes A and B, each a `floodgate run`
and its `floodctl daemon`, share one rule through a redis-server that wants TLS (port 0,
tls-port, a client certificate) and an ACL user per box (the default user off), started by this
test on a free loopback port with certificates it makes with the openssl command. Boxes,
traffic and rule as tests/control/test_cluster.py (whose helpers this test uses).

Checks: floodctl daemon refuses a password file others can read, naming the option and its
mode; both boxes join through the protected store; B's daemon with a wrong password, then with
a CA that did not make the server's certificate: B falls back alone (the store did not answer),
each failed sync is a refusal of that kind (login, tls) in the daemon's status and metrics,
Redis's or OpenSSL's error in last_error; B back with its own credentials joins again.
Then the issue's attacker, against the two live boxes: with no credentials Redis takes nothing
(no client certificate: no TLS; a certificate but no user: NOAUTH); with box A's stolen
credentials but not the cluster key it writes, with redis-cli over TLS, the four forged entries
of the issue (an allow of an attacker's /32, an escalation of a victim's /32, a charge of 10^9 to
the shared key under A's own id, an allow of 0.0.0.0/0 for ten years under B's), a forged
heartbeat for a box X (an entry and a ZADD), B's genuine last entry replayed, and entries under
B's id signed with a wrong secret and with a key id not held: each refused by both boxes and
counted by reason (a box skips entries under its own id), no allow or escalation taken, nothing
charged past the bound, 2 boxes live, and the shared limit's bound held over the next 3 s.

Prints TAP; needs root (DPDK), redis-server and openssl; builds nothing.
Usage: test_cluster_auth.py BUILD_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frames  # noqa: E402
from cluster_entries import SigningBox  # noqa: E402
from control_lib import check, finish, plan, wait_until  # noqa: E402
from test_cluster import (BOXES, BOX_TIMEOUT_S, BURST_PKTS, CLUSTER, EXCESS_BOUND,  # noqa: E402
                          RATE_PER_S, RULE, RULES, STORE_DOWN, SYNC_MS, Box, Window, free_port,
                          metrics_samples, states)

ADMIN_PASSWORD = "admin-secret"
# What the sync script calls (control/cluster/cluster_store.lua), and the calls that run it.
BOX_COMMANDS = ("-@all +evalsha +eval +script|load +time +type +zadd +zremrangebyscore +zcard "
                "+xrevrange +xadd +xrange")


def make_certificates(work):
    """Two CAs, a server certificate by the first for 127.0.0.1, a client certificate by it."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    def openssl(*args):
        subprocess.run(["openssl"] + list(args), cwd=work, check=True, capture_output=True)
    for ca in ("ca", "other-ca"):
        openssl("req", "-x509", *ec, "-keyout", ca + ".key", "-out", ca + ".pem", "-days", "2",
                "-subj", "/CN=" + ca)
    with open(os.path.join(work, "san.ext"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1\n")
    for name, extra in (("server", ["-extfile", "san.ext"]), ("client", [])):
        openssl("req", *ec, "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name)
        openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", name + ".pem", "-days", "2", *extra)
    for key in ("ca", "other-ca", "server", "client"):
        os.chmod(os.path.join(work, key + ".key"), 0o600)


class ProtectedRedis:
    def __init__(self, work, port):
        self.work, self.port = work, port
        self.sock = os.path.join(work, "redis.sock")
        conf = os.path.join(work, "redis.conf")
        with open(conf, "w") as f:
            f.write("bind 127.0.0.1\nport 0\ntls-port %d\nsave \"\"\nappendonly no\n"
                    "daemonize no\ndir %s\nlogfile %s/redis.log\nunixsocket %s\n"
                    "unixsocketperm 700\n" % (port, work, work, self.sock))
            f.write("tls-cert-file %s/server.pem\ntls-key-file %s/server.key\n"
                    "tls-ca-cert-file %s/ca.pem\ntls-auth-clients yes\n" % (work, work, work))
            f.write("user default off\nuser admin on >%s ~* &* +@all\n" % ADMIN_PASSWORD)
            for box in ("a", "b"):
                f.write("user box-%s on >secret-%s ~fg:{%s}:* resetchannels %s\n" % (
                    box, box, CLUSTER, BOX_COMMANDS))
        self.process = subprocess.Popen(["redis-server", conf], stdout=subprocess.DEVNULL)
        wait_until(lambda: self.admin("PING") == "PONG", "redis-server to answer", 15)

    def admin(self, *args):
        """One command as the admin on the Unix socket (redis-cli); its output, or None."""
        if self.process.poll() is not None:
            raise RuntimeError("redis-server exited with %d" % self.process.returncode)
        r = subprocess.run(["redis-cli", "-s", self.sock, "--user", "admin", "--pass",
                            ADMIN_PASSWORD, "--no-auth-warning"] + list(args),
                           capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def secret(work, name, text, mode=0o600):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write(text + "\n")
    os.chmod(path, mode)
    return path


def auth_options(work, box, password_file, ca="ca.pem"):
    return ["--redis-user", "box-" + box, "--redis-password-file", password_file,
            "--redis-tls-ca", os.path.join(work, ca),
            "--redis-tls-cert", os.path.join(work, "client.pem"),
            "--redis-tls-key", os.path.join(work, "client.key")]


def restart_daemon(box, options):
    box.terminate("daemon")
    if box.links.get("daemon") is not None:
        box.links.pop("daemon").close()
    box.daemon_cmd = box.base_cmd + options
    box.start_daemon()
    wait_until(lambda: answers(box), "daemon %s to answer" % box.name, 15)


def answers(box):
    """The daemon's cluster status, or None while its socket is not there yet (or stale)."""
    try:
        return box.store()
    except OSError:
        return None


def refused(box, reason, key, error):
    """B alone with the store down; every failed sync of its daemon's store a refusal of this
    kind, with the error, and the metric equal to the status."""
    wait_until(states([box], "alone", STORE_DOWN), "%s alone (%s)" % (box.name, reason), 15)
    s = wait_until(lambda: (lambda c: c if c.get("store", {}).get(key, 0) >= 2 else None)(
        box.store()), "two refused syncs", 15)
    store = s["store"]
    _, samples = metrics_samples(box)
    metric = samples.get(("floodgate_cluster_store_refusals_total",
                          (("cluster", CLUSTER), ("reason", reason))))
    # The status read after the metrics: at least as many.
    later = box.store()["store"][key]
    check(store["ok"] == 0 and store["failed"] == store[key] and error in s["last_error"] and
          not s["store_ok"] and metric is not None and store[key] <= metric <= later,
          "%s with a bad %s: alone, %d failed syncs, each refused (%s), metric %s, "
          "last_error '%s'" % (box.name, reason, store["failed"], key, metric, s["last_error"]),
          s)
    # What an operator reads: floodctl status says the store refused, and why.
    _, text, _ = box.ctl.run("status")
    line = "store refused: the login %s times, TLS %s times" % (
        "[1-9][0-9]*" if reason == "login" else "0", "[1-9][0-9]*" if reason == "tls" else "0")
    check(re.search(line, text) and error in text,
          "floodctl status on %s: the store refused (%s), with the error" % (box.name, reason),
          text)


def scenario(work, redis, a, b):
    # The daemon refuses a password file others can read, before it starts anything.
    loose = secret(work, "loose-password", "secret-a", 0o644)
    r = subprocess.run(a.base_cmd + auth_options(work, "a", loose), capture_output=True,
                       text=True, timeout=30)
    check(r.returncode == 2 and "--redis-password-file: '%s' may be read or written by others "
          "than its owner (mode 0644): chmod 600 it" % loose in r.stderr,
          "floodctl daemon refuses a password file of mode 0644 (exit %d)" % r.returncode,
          r.stderr)

    passwords = {n: secret(work, "password-" + n, "secret-" + n) for n in ("a", "b")}
    for box in (a, b):
        box.daemon_cmd = box.base_cmd + auth_options(work, box.name.lower(),
                                                     passwords[box.name.lower()])
        box.start_dataplane()
    for box in (a, b):
        wait_until(box.up, "dataplane %s to start" % box.name, 30)
        box.start_daemon()
    wait_until(states([a, b], "joined", boxes_live=2), "both boxes to join", 20)
    stores = [box.store() for box in (a, b)]
    check(all(s["store_ok"] and s["live_boxes"] == 2 and s["store"]["auth_refused"] == 0 and
              s["store"]["tls_refused"] == 0 for s in stores),
          "both boxes joined through Redis with ACL users and TLS (2 boxes live)", stores)
    members = redis.admin("ZRANGE", "fg:{%s}:boxes" % CLUSTER, "0", "-1")
    check(members is not None and sorted(members.split()) == ["A", "B"],
          "the store's boxes set holds A and B", members)

    restart_daemon(b, auth_options(work, "b", secret(work, "wrong", "secret-a")))
    refused(b, "login", "auth_refused", "the store refused the login as box-b: WRONGPASS")
    restart_daemon(b, auth_options(work, "b", passwords["b"], ca="other-ca.pem"))
    refused(b, "tls", "tls_refused",
            "TLS: the store's certificate is refused: self-signed certificate in certificate chain")

    restart_daemon(b, auth_options(work, "b", passwords["b"]))
    wait_until(states([a, b], "joined", boxes_live=2), "B to join again", 20)
    check(True, "B with its own credentials again: both boxes joined, 2 boxes live")
    forged(work, redis, a, b)


def redis_cli(work, port, *args, tls=("--cert", "client.pem", "--key", "client.key"),
              user=("--user", "box-a", "--pass", "secret-a")):
    """One command over TLS as the attacker holds it: box A's certificate and password."""
    r = subprocess.run(["redis-cli", "--tls", "--cacert", "ca.pem", *tls, "-h", "127.0.0.1",
                        "-p", str(port), *user, "--no-auth-warning"] + list(args), cwd=work,
                       capture_output=True, text=True, timeout=30)
    return (r.stdout + r.stderr).strip()


def forged(work, redis, a, b):
    log = "fg:{%s}:log" % CLUSTER
    port = redis.port
    no_cert = redis_cli(work, port, "XADD", log, "*", "b", "X", "d", "", tls=(), user=())
    no_user = redis_cli(work, port, "XADD", log, "*", "b", "X", "d", "", user=())
    check("NOAUTH" in no_user and "NOAUTH" not in no_cert and not re.match(r"^\d+-\d+$", no_cert),
          "no credentials: Redis takes nothing (no certificate: '%s'; no user: '%s')" % (
              no_cert[:60], no_user[:60]))

    before = [box.store() for box in (a, b)]
    dp_before = [box.cluster() for box in (a, b)]
    # B's genuine last entry, copied whole for the replay (JSON: its lines keep their tabs and
    # newlines).
    recent = json.loads(redis.admin("-2", "--json", "XREVRANGE", log, "+", "-", "COUNT", "50"))
    genuine = next(fields for _, fields in recent if fields[:2] == ["b", "B"])
    x = SigningBox("B")
    entries = [
        ["b", "X", "d", "!allow\t198.18.1.1/32\t600000\n"],           # the attacker's /32
        ["b", "X", "d", "!escalated\t198.18.1.50/32\t600000\n"],      # a victim's /32
        ["b", "A", "d", "%s\t198.18.255.1/32\t1000000000\n" % RULE],   # 10^9 under A's id
        ["b", "B", "d", "!allow\t0.0.0.0/0\t315360000000\n"],         # everything, 10 years
        ["b", "X", "d", ""],                                          # a heartbeat for X
        genuine,                                                      # B's, replayed
        [f.decode() for f in x.fields("%s\t198.18.255.1/32\t9\n" % RULE, secret="w" * 64)],
        [f.decode() for f in x.fields("%s\t198.18.255.1/32\t9\n" % RULE, key_id="k9")],
    ]
    for fields in entries:
        out = redis_cli(work, port, "XADD", log, "*", *fields)
        assert re.match(r"^\d+-\d+$", out), out
    redis_cli(work, port, "ZADD", "fg:{%s}:boxes" % CLUSTER, "99999999999999", "X")
    # Expected, counted from the entries above: A skips the one under its id, B the five under
    # its own.
    want = [{"unsigned": 4, "replayed": 1, "bad_mac": 1, "unknown_key": 1},
            {"unsigned": 4}]

    def deltas(box, b0):
        now = box.store()["store"]["entries_refused"]
        return {k: v - b0["store"]["entries_refused"][k] for k, v in now.items()
                if v != b0["store"]["entries_refused"][k]}
    got = wait_until(lambda: (lambda d: d if all(sum(x.values()) >= sum(w.values())
                                                  for x, w in zip(d, want)) else None)(
        [deltas(box, b0) for box, b0 in zip((a, b), before)]), "both boxes to read them", 10)
    w = Window([a, b], 3)
    after = [box.store() for box in (a, b)]
    dp_after = [box.cluster() for box in (a, b)]
    allows = [[o for o in box.ask("overrides")["overrides"] if o["list"] == "allow"]
              for box in (a, b)]
    check(got == want, "each forged entry refused by both boxes, by reason: A %s, B %s" % (
        got[0], got[1]), (got, want))
    check(not any(allows) and all(s["allows_added"] == s0["allows_added"]
                                  for s, s0 in zip(after, before)) and
          all(d["escalations"] == d0["escalations"] and
              d["clamped_charges"] == d0["clamped_charges"] for d, d0 in zip(dp_after, dp_before))
          and all(s["live_boxes"] == 2 for s in after),
          "nothing taken: no allow on either box, no escalation, no charge clamped (none "
          "believed), 2 boxes live", (allows, dp_before, dp_after, after))
    lo_s, hi_s = w.total_seconds()
    upper = RATE_PER_S * hi_s + BURST_PKTS + EXCESS_BOUND
    check(w.steady() and w.total() <= upper and w.total() >= 0.8 * RATE_PER_S * lo_s,
          "the shared limit after them: A + B passed %d in %.2f s, within 0.8 x the limit and "
          "%.0f (the bound), both joined" % (w.total(), lo_s, upper), w.seen)


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP floodgate run needs root (DPDK)")
        return 0
    for program in ("redis-server", "redis-cli", "openssl"):
        if shutil.which(program) is None:
            check(False, "%s is installed (scripts/lib.sh installs it)" % program)
            return plan()  # 1: a check failed
    work = tempfile.mkdtemp(prefix="fg-cluster-auth-")
    make_certificates(work)
    port = free_port()
    rules = os.path.join(work, "rules.yaml")
    with open(rules, "w") as f:
        f.write(RULES.format(name=CLUSTER, port=port, sync_ms=SYNC_MS, boxes=BOXES,
                             box_timeout_s=BOX_TIMEOUT_S, rule=RULE, rate=RATE_PER_S,
                             burst=BURST_PKTS))
    trace = os.path.join(work, "trace.pcap")
    frames.write_pcap(trace, [frames.udp4("198.18.1.%d" % (1 + i), "198.18.255.1", 1024 + i, 53)
                              for i in range(100)])
    cpu = 1 if os.cpu_count() > 1 else 0
    a, b = Box(work, "A", rules, trace, cpu), Box(work, "B", rules, trace, cpu)
    for box in (a, b):
        box.base_cmd = list(box.daemon_cmd)
    redis = None
    try:
        redis = ProtectedRedis(work, port)
        scenario(work, redis, a, b)
    except Exception as e:  # a failed wait or an unexpected reply ends the run, counted
        check(False, "scenario ran to the end", repr(e))
    finally:
        for box in (a, b):
            box.close()
        if redis is not None:
            redis.stop()
    return finish(work, ("daemon-A.log", "daemon-B.log", "redis.log"))


if __name__ == "__main__":
    sys.exit(main())
