"""The measured processes: output line by line with a timeout, rates parsed, floodgate-tx, stop."""
import os
import re
import select
import signal
import statistics
import subprocess
import sys
import time


def log(msg):
    print("harness: " + msg, file=sys.stderr, flush=True)



class Lines:
    """A process's output, line by line, with a timeout (select on the raw pipe: a buffered
    reader would hold lines select cannot see)."""

    def __init__(self, p):
        self.fd, self.buf, self.eof = p.stdout.fileno(), b"", False

    def next(self, timeout):
        end = time.monotonic() + timeout
        while b"\n" not in self.buf and not self.eof:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 65536)
            self.eof = not chunk
            self.buf += chunk
        if b"\n" not in self.buf:
            line, self.buf = self.buf, b""
            return line.decode(errors="replace") if line else None
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace") + "\n"


class Sampler:
    """Runs a process and turns its per-second output lines into rate samples."""

    def __init__(self, cmd, parse, cwd=None):
        self.cmd, self.parse, self.cwd = cmd, parse, cwd
        self.lines = []

    def run(self, warmup, samples, timeout):
        p = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             cwd=self.cwd, start_new_session=True)
        values, state, out = [], {}, Lines(p)
        end = time.monotonic() + timeout
        try:
            while len(values) < warmup + samples and time.monotonic() < end:
                line = out.next(1.0)
                if line is None:
                    if out.eof or p.poll() is not None:
                        break
                    continue
                self.lines.append(line)
                v = self.parse(line, state)
                if v is not None:
                    values.append(v)
        finally:
            stop(p)
            rest = p.stdout.read() if p.stdout else b""
            self.lines += rest.decode(errors="replace").splitlines(True)
        if len(values) < warmup + samples:
            raise RuntimeError("%s: %d samples of %d; last output:\n%s" % (
                os.path.basename(self.cmd[0]), len(values), warmup + samples,
                "".join(self.lines[-15:])))
        return values[warmup:]


def stop(p, grace=20):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def testpmd_parser(port):
    """testpmd --stats-period 1 prints each port's block in port order; Rx-pps of `port`."""
    def parse(line, state):
        if "NIC statistics for port" in line:
            state["port"] = int(re.search(r"port (\d+)", line).group(1))
        m = re.search(r"Rx-pps:\s+(\d+)", line)
        if m and state.get("port") == port:
            return float(m.group(1))
        return None
    return parse


def floodgate_parser(line, state):
    """floodgate run --stats-interval 1: "[time] over T s: outside rx N pps; ..." lines, each
    the rate over its interval on the dataplane's clock."""
    m = re.search(r"\] over [\d.]+ s: outside rx (\d+) pps", line)
    return float(m.group(1)) if m else None


class Generator:
    """floodgate-tx in the background, as a context: started and waited for until its port
    is up on entry; on exit stopped, and its median rate (None if it sent nothing) appended
    to `rates`. A generator that sent nothing fails the run."""

    def __init__(self, cmd, rates):
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  start_new_session=True)
        self.out, self.text, self.rates = Lines(self.p), "", rates

    def __enter__(self):
        self.wait_ready()
        return self

    def __exit__(self, *exc):
        sent = None
        try:
            sent = self.finish()
        finally:
            self.rates.append(sent)
        return False

    def wait_ready(self, timeout=120):
        end = time.monotonic() + timeout
        while time.monotonic() < end and not self.out.eof:
            line = self.out.next(1.0)
            if line:
                self.text += line
                if line.startswith("floodgate-tx: ready"):
                    return
        raise RuntimeError("floodgate-tx did not start:\n" + self.text[-2000:])

    def finish(self):
        """Stops it; returns its median sending rate (raises if it sent nothing)."""
        stop(self.p)
        while not self.out.eof:
            line = self.out.next(5.0)
            if line is None:
                break
            self.text += line
        sent = [v for v in (tx_parser(l, {}) for l in self.text.splitlines()) if v]
        if not sent:
            raise RuntimeError("floodgate-tx sent nothing:\n" + self.text[-2000:])
        return statistics.median(sent)


def tx_parser(line, state):
    m = re.match(r"tx (\d+) pps", line)
    return float(m.group(1)) if m else None
