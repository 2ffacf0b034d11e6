"""A memif peer that comes and goes under full-rate traffic: floodgate is the memif server on
two ports, dpdk-testpmd (txonly, as fast as it can, on both) connects as the client and is
stopped once floodgate has taken ROUND_FRAMES frames from it in the round, by SIGINT and
SIGKILL in turn. Each round disconnects both ports. After each one floodgate must be alive,
must have seen both ports lost (once each, per round), and every reading must keep the stats'
invariants. --stats must be written while it runs. At the end SIGTERM (port_vanish.sh sends
SIGINT) must give exit status 0, an exit summary with the --stats file's counts and both ports'
losses, and a --stats file that adds up too.

    memif_peer.py BUILD_DIR ROUNDS [--stock]

--stock runs DPDK's own memif (FLOODGATE_STOCK_MEMIF=1), to measure against it: the driver
check is then skipped, and a crash ends the run with the round it happened in. TAP output."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "control"))
from control_lib import (FLOODGATE, DataplaneLink, check, stats_invariants,  # noqa: E402
                         threads_of, wait_until)

ROUNDS = int(sys.argv[2])
STOCK = "--stock" in sys.argv[3:]
ROUND_FRAMES = 20000  # frames floodgate takes from testpmd in a round before it is stopped
PEER_START_S = 60     # testpmd's start on 2 shared CPUs, under a polling floodgate
RULES = """\
rules:
  - name: all
    limit: { rate: 1000/s, burst: 100 }
"""


def memif(index, role, work):
    return ("net_memif%d,role=%s,socket=%s/m%d.sock,socket-abstract=no"
            % (index, role, work, index))


def start_floodgate(work):
    with open(os.path.join(work, "rules.yaml"), "w") as f:
        f.write(RULES)
    env = dict(os.environ)
    if STOCK:
        env["FLOODGATE_STOCK_MEMIF"] = "1"
    log = open(os.path.join(work, "floodgate.log"), "w")
    p = subprocess.Popen(
        [FLOODGATE, "run", "-l", "0-1", "--no-huge", "-m", "512", "--no-pci",
         "--file-prefix", "fgmp%d" % os.getpid(),
         "--vdev", memif(0, "server", work), "--vdev", memif(1, "server", work),
         "--", "--config", os.path.join(work, "rules.yaml"),
         "--stats", os.path.join(work, "stats.json"), "--stats-interval", "1",
         "--control", os.path.join(work, "dataplane.sock")],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    # Its ports are up and its control socket listens once it says so.
    wait_until(lambda: p.poll() is not None or "\nfloodgate: " in "\n" + log_text(work),
               "floodgate's start")
    return p


def start_peer(work, round_no):
    log = open(os.path.join(work, "testpmd.%d.log" % round_no), "w")
    return subprocess.Popen(
        ["dpdk-testpmd", "-l", "0-1", "--no-huge", "-m", "512", "--no-pci",
         "--file-prefix", "fgmptp%d" % os.getpid(),
         "--vdev", memif(0, "client", work), "--vdev", memif(1, "client", work),
         "--", "--forward-mode=txonly", "--stats-period", "100", "--rxq=1", "--txq=1",
         "--total-num-mbufs=16384"],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def log_text(work):
    with open(os.path.join(work, "floodgate.log")) as f:
        return f.read()


def lines_with(work, text):
    return sum(1 for line in log_text(work).splitlines() if text in line)


def saved_stats(work):
    try:
        with open(os.path.join(work, "stats.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def nics(stats):
    return {n["role"]: n for n in stats["nic"]}


def adds_up(stats, rounds):
    """What must hold once a round's disconnect is seen; a list of what does not. (memif's own
    counters, stats.nic, read 0 while no peer is connected: they are not compared.)"""
    broken = stats_invariants(stats)
    n = nics(stats)
    for role in ("outside", "inside"):
        if n[role].get("losses") != rounds or n[role].get("link") != "down":
            broken.append("%s port: link %s, %s losses (want down, %d)"
                          % (role, n[role].get("link"), n[role].get("losses"), rounds))
    return broken


def sending(stats, frames):
    return (all(n.get("link") == "up" for n in nics(stats).values()) and
            stats["ports"]["outside_to_inside"]["rx"] >= frames)


def stop_peer(peer, sig):
    peer.send_signal(sig)
    try:
        peer.wait(timeout=10)
    except subprocess.TimeoutExpired:
        peer.kill()
        peer.wait()


def run(work):
    fg = start_floodgate(work)
    if not check(fg.poll() is None, "floodgate runs as the memif server on two ports",
                 log_text(work)):
        return
    if not STOCK:
        check(lines_with(work, "net_memif with floodgate's disconnect fix") == 2,
              "both ports run the patched memif driver (dpdk/)", log_text(work))
    link = DataplaneLink(os.path.join(work, "dataplane.sock"))

    def stats():
        """A reading; one refused because the worker did not answer within a second (a
        2-CPU machine shared with other work can hold it off that long) is asked again."""
        reply = wait_until(lambda: (lambda r: r if r.get("ok") else None)(
            link.ask({"cmd": "stats"})), "a stats reading")
        return reply["stats"]

    crashed_in = None
    for r in range(1, ROUNDS + 1):
        before = stats()["ports"]["outside_to_inside"]["rx"]
        t0 = time.monotonic()
        peer = start_peer(work, r)
        sig = signal.SIGINT if r % 2 else signal.SIGKILL
        try:
            # Seen up by the port watch, and the frames taken: a full-rate peer now.
            wait_until(lambda: fg.poll() is not None or peer.poll() is not None or
                       sending(stats(), before + ROUND_FRAMES),
                       "frames from testpmd", PEER_START_S)
        finally:
            t1 = time.monotonic()
            stop_peer(peer, sig)
            print("# round %d: %.1f s to frames, %.1f s to stop" % (r, t1 - t0, time.monotonic() - t1))
        if fg.poll() is None:
            # Seen lost by the port watch: the disconnect is over.
            try:
                wait_until(lambda: fg.poll() is not None or all(
                    n.get("losses") == r for n in nics(stats()).values()),
                    "both ports lost", 10)
            except (OSError, RuntimeError):
                pass  # the control connection died with floodgate
        if fg.poll() is not None:
            crashed_in = r
            check(False, "round %d (%s): floodgate alive after its peer left" % (r, sig.name),
                  "floodgate ended with status %d\n%s" % (fg.returncode, log_text(work)[-2000:]))
            break
        # Every frame received is decided: a burst waits at most one loop pass.
        broken = []
        try:
            wait_until(lambda: not adds_up(stats(), r), "counters that add up", 10)
        except TimeoutError:
            broken = adds_up(stats(), r)
        check(not broken, "round %d (%s): floodgate alive, both ports lost once more, counters "
              "add up" % (r, sig.name), "\n".join(broken))
    if crashed_in is not None:
        print("# floodgate crashed in round %d of %d (%d port disconnects)"
              % (crashed_in, ROUNDS, 2 * crashed_in))
        return
    link.close()
    # Saved while running (every --stats-interval), so that a crash would leave counts.
    running = wait_until(lambda: saved_stats(work), "--stats written while running")
    check(not stats_invariants(running) and running["packets"] > 0,
          "--stats is written while floodgate runs: %d frames decided" % running["packets"],
          "\n".join(stats_invariants(running)))
    for what in ("lost", "back"):
        expected = 2 * ROUNDS if what == "lost" else 2 * (ROUNDS - 1)
        check(lines_with(work, "): " + what) == expected,
              "%d lines '%s', one per port and disconnect" % (expected, what))
    fg.send_signal(signal.SIGTERM)
    fg.wait(timeout=30)
    check(fg.returncode == 0, "SIGTERM: floodgate exits with status 0 (%d)" % fg.returncode)
    with open(os.path.join(work, "stats.json")) as f:
        final = json.load(f)
    summary = ["packets %d: passed %d" % (final["packets"], final["passed"]),
               "port 0 (outside): link down, lost %d times" % ROUNDS,
               "port 1 (inside): link down, lost %d times" % ROUNDS]
    check(all(lines_with(work, line) == 1 for line in summary),
          "the exit summary has the stats file's counts and both ports' losses",
          "\n".join(summary) + "\n" + log_text(work)[-1500:])
    broken = adds_up(final, ROUNDS)
    check(not broken, "the --stats file adds up: %d frames decided over %d rounds"
          % (final["packets"], ROUNDS), "\n".join(broken))


def main():
    work = tempfile.mkdtemp(prefix="fg-memif-")
    try:
        run(work)
    except (TimeoutError, subprocess.TimeoutExpired) as e:
        check(False, "floodgate answered in time: %s" % e)
        for pid in subprocess.run(["pgrep", "-f", "fgmp%d " % os.getpid()],
                                  capture_output=True, text=True).stdout.split():
            print("\n".join("#   " + line for line in threads_of(pid).splitlines()))
        print("#   " + log_text(work)[-3000:].replace("\n", "\n#   "))
    finally:
        subprocess.run(["pkill", "-KILL", "-f", "fgmptp%d|fgmp%d " % (os.getpid(), os.getpid())],
                       check=False)
        subprocess.run(["rm", "-rf", work, "/var/run/dpdk/fgmp%d" % os.getpid(),
                        "/var/run/dpdk/fgmptp%d" % os.getpid()], check=False)
    from control_lib import results
    print("1..%d" % len(results))
    sys.exit(0 if results and all(results) else 1)


if __name__ == "__main__":
    main()
