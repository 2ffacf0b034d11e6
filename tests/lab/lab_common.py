"""What the lab scripts' Python shares (tests/lab/*.py import it from their own folder).

Work reads a lab's work folder forgivingly: a file a part of the run did not write reads as
the default (JSON) or "" (text), so that the checks say which part failed rather than end in a
traceback. Checks prints numbered ok/FAIL lines and ends with the count and the exit status.
tsc_ratio and clock_allowance compare floodgate's clock with the kernel's. stamped_udp_server
and stamp_and_drops: a lab's UDP server that takes the kernel's receive time of each datagram.
veth_into_namespace: one veth for floodgate, its peer in a namespace of the lab's own.
"""
import contextlib
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys

SO_TIMESTAMPNS = 35  # <asm-generic/socket.h>: Python's socket module does not name these two
SO_RXQ_OVFL = 40


def family(addr):
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def dump(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)


class Work:
    """A lab's work folder; a name is a path below it ("shared/server.json")."""

    def __init__(self, path):
        self.path = path

    def load(self, name, default=None):
        try:
            with open(os.path.join(self.path, name)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return default

    def text(self, name):
        try:
            with open(os.path.join(self.path, name)) as f:
                return f.read()
        except OSError:
            return ""


class Checks:
    """check(cond, what): one numbered line, "ok" or "FAIL"; the failures kept for finish()."""

    def __init__(self):
        self.count, self.failures = 0, []

    def __call__(self, cond, what):
        self.count += 1
        print(f"{'ok  ' if cond else 'FAIL'} {self.count:2d}. {what}")
        if not cond:
            self.failures.append(what)

    def summary(self):
        print(f"{len(self.failures)} of {self.count} checks failed")

    def finish(self):
        """The summary line, then exit: 1 if any check failed."""
        self.summary()
        sys.exit(1 if self.failures else 0)


def dpdk_tsc_khz(log):
    """The TSC rate DPDK calibrated, from a floodgate log with EAL's debug lines ("TSC
    frequency is ~N KHz", rounded to 10 MHz); None where it is not there."""
    m = re.search(r"TSC frequency is ~(\d+) KHz", log)
    return int(m.group(1)) if m else None


def kernel_cpu_mhz():
    """/proc/cpuinfo's cpu MHz (the kernel's tsc_khz on this VM); None where it is not there."""
    try:
        with open("/proc/cpuinfo") as f:
            return float(re.search(r"cpu MHz\s*:\s*([\d.]+)", f.read()).group(1))
    except (OSError, AttributeError):
        return None


def tsc_ratio(dpdk_khz):
    """How much faster floodgate's clock runs than the real one: its nanoseconds are TSC ticks
    at the rate DPDK calibrated (dpdk_khz), the real ones ticks at the kernel's rate. (ratio,
    kernel MHz), both None where either rate is unknown."""
    mhz = kernel_cpu_mhz()
    if not dpdk_khz or not mhz:
        return None, mhz
    return mhz * 1000 / dpdk_khz, mhz


def stamped_udp_server(addr, port, rcvbuf, timeout):
    """A UDP socket on addr:port whose datagrams come with the kernel's receive time
    (SO_TIMESTAMPNS, CLOCK_REALTIME: one clock in every namespace) and the socket's own count of
    the datagrams it dropped (SO_RXQ_OVFL); read with recvmsg(2048, 256), then stamp_and_drops."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
    s.bind((addr, port))
    s.settimeout(timeout)
    return s


def stamp_and_drops(ancillary):
    """(receive time in ns, the socket's drops so far) from recvmsg's ancillary data; None for
    either one the kernel did not send (no drops yet: no SO_RXQ_OVFL message)."""
    stamp = dropped = None
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", data[:16])
            stamp = sec * 1_000_000_000 + nsec
        elif level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL:
            dropped = struct.unpack("I", data[:4])[0]
    return stamp, dropped


def clock_allowance(dpdk_khz):
    """tsc_ratio as an allowance: a ratio above 1 lets floodgate admit that much more than rate
    x real seconds. (ratio, at least 1, and how it was found); 0.5% where it is unknown."""
    ratio, mhz = tsc_ratio(dpdk_khz)
    if ratio is None:
        return 1.005, "unknown: 0.5% allowed (DPDK rounds its TSC rate to 10 MHz of ~2,600)"
    return max(ratio, 1.0), (f"TSC {mhz * 1000:,.0f} kHz (kernel) / {dpdk_khz:,} kHz (DPDK) = "
                             f"{ratio:.5f}")


def _exit_on_term(signum, _frame):
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def veth_into_namespace(tag):
    """A veth pair, TAG-o here for floodgate's port and TAG-op in the namespace TAG-ns, both up
    with no IPv6 (no router solicitations among the frames); yields the namespace's name, and
    removes both on the way out, also after a failure."""
    ns = tag + "-ns"
    # meson ends a test that times out with SIGTERM, whose default action would skip the
    # finally below and leave the pair and the namespace behind.
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit_on_term)
    try:
        for cmd in (["ip", "netns", "add", ns],
                    ["ip", "link", "add", tag + "-o", "type", "veth", "peer", "name", tag + "-op"],
                    ["ip", "link", "set", tag + "-op", "netns", ns],
                    ["sysctl", "-qw", "net.ipv6.conf.%s-o.disable_ipv6=1" % tag],
                    ["ip", "link", "set", tag + "-o", "up"],
                    ["ip", "netns", "exec", ns, "sysctl", "-qw",
                     "net.ipv6.conf.%s-op.disable_ipv6=1" % tag],
                    ["ip", "netns", "exec", ns, "ip", "link", "set", tag + "-op", "up"]):
            subprocess.run(cmd, check=True)
        yield ns
    finally:
        subprocess.run(["ip", "link", "del", tag + "-o"], stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
