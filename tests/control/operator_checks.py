"""The control plane as an operator meets it, each part a run of TAP checks in the control test
(tests/control/test_control.py): floodctl daemon's --metrics addresses, floodctl watch on a
pseudo-terminal, piped and as JSON, and the CLI's no-ops, errors, usage and JSON forms."""
import json
import os
import re
import subprocess
import time
import urllib.request

from control_lib import (DEADLINE_S, FLOODCTL, FLOODGATE, Floodctl, check, listening_tcp,
                         telemetry, wait_until)


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

    # dns has one source, so its summary has no Space-Saving error. Refused at the trace's full
    # rate, past a core's first 1,024 refusals a second, it is counted from samples
    # (top_offenders: sampled): "about N, +-E at confidence 99%" (tests/test_stats_text.cpp has
    # every form); an exact count would be a plain number. The count moves between the two
    # readings: at least the JSON's.
    top = ctl.json("top", "--rule", "dns", "-n", "1")["top"][0]["top_refused"][0]
    code, out, err = ctl.run("top", "--rule", "dns", "-n", "1")
    shown = out.splitlines()[1].split() if code == 0 and len(out.splitlines()) > 1 else []
    exact = len(shown) == 3 and shown[2].isdigit() and int(shown[2]) >= top["count"]
    about = (len(shown) == 8 and "sampling_error" in top and shown[2] == "about" and
             shown[3].rstrip(",").isdigit() and int(shown[3].rstrip(",")) >= top["count"] and
             shown[4].startswith("+-") and shown[5:] == ["at", "confidence", "99%"])
    check(top["error"] == 0 and shown[:2] == [top["source"], "refused"] and (exact or about),
          "top shows one source's count as a number or an estimate (%s; JSON count %d, error "
          "%d)" % (" ".join(shown), top["count"], top["error"]), out)

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
