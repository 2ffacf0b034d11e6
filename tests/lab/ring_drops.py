"""What a net_af_packet port's kernel ring drops, counted (issue 43): floodgate run on one veth
of a pair the test makes (its peer in a namespace of the test's own), with a ring of FRAMECNT
frames. floodgate is stopped (SIGSTOP) while the peer sends FRAMES frames, far more than the ring
holds, then continued: the kernel dropped what did not fit, and floodgate never saw it.

Checks: the veth took exactly FRAMES frames (its kernel counter); floodgate's port then shows
rx_packets + rx_missed == FRAMES exactly, rx_ring_drops > 0 and within rx_missed; SIGINT: exit 0.
Before the ring's drops were read, rx_missed stayed 0 and the second check times out.

    ring_drops.py BUILD_DIR

Needs root; cleans up after itself. Addresses: raw frames of 198.18.0.0/15 only. TAP output."""
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "control"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab_common import veth_into_namespace  # noqa: E402
from control_lib import FLOODGATE, DataplaneLink, check, finish, wait_until  # noqa: E402

FRAMES = 5000   # sent while floodgate is stopped: bounded
FRAMECNT = 512  # the PMD's ring (its framecnt)
RULES = """\
rules:
  - name: all
    match: { proto: udp }
    limit: { rate: 1000/s, burst: 100 }
"""


def frame(i):
    """An Ethernet/IPv4/UDP frame from 198.18.7.7 to 198.18.8.8 (checksums left 0: only
    counted here)."""
    udp = struct.pack(">HHHH", 1024 + i % 1000, 53, 8 + 18, 0) + b"r" * 18
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xffff, 0, 64, 17, 0,
                     socket.inet_aton("198.18.7.7"), socket.inet_aton("198.18.8.8"))
    return b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" + ip + udp


def counter(ns, dev, name):
    cmd = ["cat", "/sys/class/net/%s/statistics/%s" % (dev, name)]
    if ns:
        cmd = ["ip", "netns", "exec", ns] + cmd
    return int(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def run(work, tag, ns):
    dev, peer = tag + "-o", tag + "-op"
    sock = os.path.join(work, "dataplane.sock")
    rules = os.path.join(work, "rules.yaml")
    with open(rules, "w") as f:
        f.write(RULES)
    log = open(os.path.join(work, "floodgate.log"), "w")
    fg = subprocess.Popen(
        [FLOODGATE, "run", "--lcores", "0@0,1@%d" % (1 if os.cpu_count() > 1 else 0),
         "--no-huge", "--no-pci", "--no-shconf", "-m", "256", "--file-prefix", tag,
         "--vdev", "net_af_packet0,iface=%s,qpairs=1,framecnt=%d" % (dev, FRAMECNT), "--",
         "--config", rules, "--control", sock], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: os.path.exists(sock) or fg.poll() is not None, "floodgate to start", 60)
        link = DataplaneLink(sock, timeout=10)
        port = lambda: link.ask({"cmd": "stats"})["stats"]["nic"][0]  # noqa: E731
        before = port()
        took = counter(None, dev, "rx_packets")
        fg.send_signal(signal.SIGSTOP)
        try:
            sender = ("import socket,sys\n"
                      "s=socket.socket(socket.AF_PACKET,socket.SOCK_RAW)\n"
                      "s.bind((sys.argv[1],0))\n"
                      "frames=[bytes.fromhex(x) for x in sys.stdin.read().split()]\n"
                      "[s.send(f) for f in frames]\n")
            subprocess.run(["ip", "netns", "exec", ns, "python3", "-c", sender, peer],
                           input=" ".join(frame(i).hex() for i in range(FRAMES)), text=True,
                           check=True, timeout=60)
            took = counter(None, dev, "rx_packets") - took
        finally:
            fg.send_signal(signal.SIGCONT)
        check(took == FRAMES, "the veth took the %d frames sent while floodgate was stopped "
              "(its counter: %d)" % (FRAMES, took))
        seen = lambda p: p["rx_packets"] + p["rx_missed"] - before["rx_packets"] - \
            before["rx_missed"]  # noqa: E731
        after = wait_until(lambda: (lambda p: p if seen(p) >= FRAMES else None)(port()),
                           "floodgate's port to account for every frame", 10)
        drops = after.get("rx_ring_drops", 0) - before.get("rx_ring_drops", 0)
        check(seen(after) == FRAMES and 0 < drops <= after["rx_missed"] - before["rx_missed"],
              "floodgate's port: rx_packets %d + rx_missed %d = %d frames, exactly those sent; "
              "%d of them dropped by the kernel ring (%d frames)" % (
                  after["rx_packets"] - before["rx_packets"],
                  after["rx_missed"] - before["rx_missed"], seen(after), drops, FRAMECNT),
              (before, after))
        link.close()
        fg.send_signal(signal.SIGINT)
        check(fg.wait(timeout=30) == 0, "floodgate exits 0 on SIGINT")
    finally:
        if fg.poll() is None:
            fg.kill()
            fg.wait()
        log.close()


def main():
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root (namespaces, veths, DPDK)")
        return 0
    tag = "fgrd%d" % (os.getpid() % 100000)
    work = tempfile.mkdtemp(prefix="fg-ring-drops-")
    try:
        with veth_into_namespace(tag) as ns:
            run(work, tag, ns)
    except Exception as e:  # a failed wait or command ends the run, counted
        check(False, "the lab ran to the end", repr(e))
    return finish(work, ("floodgate.log",))


if __name__ == "__main__":
    sys.exit(main())
