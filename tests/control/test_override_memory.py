"""Overrides never fail a rebuild at the memory the project's own labs give a box (issue 42,
item 5): one `floodgate run --no-huge -m 256` (as tests/lab/cluster.sh starts a box), then,
through its control socket, 40 IPv4 allows, 100 IPv6 /64 allows and 100 IPv6 /128 blocks,
one at a time: each override rebuilds the rules' prefix tables beside the running ones, and
each must be taken. Then each is removed again, one at a time (more rebuilds). And a start
given too little memory for an override's rebuild is refused, naming -m.

Expected counts are the overrides this test sent, counted here.

Prints TAP; needs root (DPDK); builds nothing.
Usage: test_override_memory.py BUILD_DIR
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frames  # noqa: E402
from control_lib import FLOODGATE, DataplaneLink, check, finish, wait_until  # noqa

LAB_MB = 256  # tests/lab/cluster.sh's -m
TOO_LITTLE_MB = 128

RULES = """\
allow: [198.18.200.0/24, "2001:db8:ffff::/48"]
block: [198.18.201.0/24]
rules:
  - name: total
    match: { proto: udp }
    limit: { rate: 1000/s, burst: 50 }
"""

IPV4_ALLOWS = ["198.18.%d.%d/32" % (10 + i // 200, i % 200) for i in range(40)]
IPV6_ALLOWS = ["2001:db8:%x:%x::/64" % (0x100 + i // 16, i) for i in range(100)]
IPV6_BLOCKS = ["2001:db8:aaaa:%x::%x/128" % (i // 10, i + 1) for i in range(100)]


def command(work, mb, rules, trace, name):
    sock = os.path.join(work, "dataplane-%s.sock" % name)
    return sock, [
        FLOODGATE, "run", "--lcores", "0@0,1@%d" % min(1, os.cpu_count() - 1), "--no-huge", "--no-pci", "--no-shconf",
        "-m", str(mb), "--file-prefix", "fgom%s%d" % (name, os.getpid()),
        "--vdev", "net_pcap0,rx_pcap=%s,tx_pcap=%s" % (trace, os.path.join(work, "sent.pcap")),
        "--", "--config", rules, "--control", sock]


def overrides(sock):
    """Adds then removes each override, one request each; counts the ones taken."""
    link = DataplaneLink(sock, timeout=60)
    sent = [("allow", p) for p in IPV4_ALLOWS + IPV6_ALLOWS] + [("block", p) for p in IPV6_BLOCKS]
    failed = []
    for verdict, prefix in sent:
        reply = link.ask({"cmd": "override_add", "list": verdict, "prefix": prefix})
        if not reply.get("ok"):
            failed.append((prefix, reply.get("error")))
    held = link.ask({"cmd": "overrides"})["overrides"]
    check(not failed and len(held) == len(sent),
          "%d overrides added at -m %d (%d IPv4 allows, %d IPv6 /64 allows, %d IPv6 /128 "
          "blocks): every rebuild taken, %d held" % (len(sent), LAB_MB, len(IPV4_ALLOWS),
                                                     len(IPV6_ALLOWS), len(IPV6_BLOCKS),
                                                     len(held)), failed[:5])
    failed = []
    for verdict, prefix in sent:
        reply = link.ask({"cmd": "override_del", "list": verdict, "prefix": prefix})
        if not reply.get("ok"):
            failed.append((prefix, reply.get("error")))
    held = link.ask({"cmd": "overrides"})["overrides"]
    check(not failed and not held, "each removed again: every rebuild taken, none held",
          failed[:5])
    link.close()


def too_little(work, rules, trace):
    _, cmd = command(work, TOO_LITTLE_MB, rules, trace, "small")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    check(p.returncode != 0 and "an override would not fit" in p.stderr and
          "give more with -m" in p.stderr,
          "a start at -m %d is refused, naming -m" % TOO_LITTLE_MB, p.stderr[-2000:])


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP floodgate run needs root (DPDK)")
        return 0
    work = tempfile.mkdtemp(prefix="fg-override-memory-")
    rules = os.path.join(work, "rules.yaml")
    with open(rules, "w") as f:
        f.write(RULES)
    trace = os.path.join(work, "trace.pcap")
    frames.write_pcap(trace, [frames.udp4("198.18.1.1", "198.18.255.1", 1024, 80)])
    sock, cmd = command(work, LAB_MB, rules, trace, "lab")
    err = os.path.join(work, "dataplane.err")
    dataplane = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    try:
        def up():
            if dataplane.poll() is not None:
                raise RuntimeError("the dataplane exited with %d" % dataplane.returncode)
            return os.path.exists(sock)
        wait_until(up, "the dataplane's control socket", 60)
        overrides(sock)
    except Exception as e:  # a failed wait or an unexpected reply ends the run, counted
        check(False, "scenario ran to the end", repr(e))
    finally:
        dataplane.kill()
        dataplane.wait()
    too_little(work, rules, trace)
    return finish(work, ("dataplane.err",))


if __name__ == "__main__":
    sys.exit(main())
