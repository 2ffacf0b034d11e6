"""Checks what `floodgate replay --inside` wrote for floodgate-gen's `proxied` capture
(tests/scenario/replay_proxy.sh): every number computed from the capture itself and from the SYN-ACKs
floodgate answered, read with tshark, every checksum checked.

Usage: replay_proxy_check.py WORK_DIR   (two-way.pcap, pass.pcap, drop.pcap, answers.pcap,
                                         stats.json in it)
"""
import json
import subprocess
import sys

FIELDS = ["ip.src", "ipv6.src", "tcp.srcport", "tcp.dstport", "tcp.flags", "tcp.seq_raw",
          "tcp.ack_raw", "tcp.len", "tcp.options.mss_val", "tcp.options.wscale.shift",
          "tcp.options.sack_perm", "tcp.options.timestamp.tsval", "tcp.checksum.status",
          "ip.checksum.status"]
SYN, ACK, FIN, RST, PSH = 0x02, 0x10, 0x01, 0x04, 0x08
SERVED = [40000, 40001, 40002, 40003]  # the capture's client ports (perf/floodgate_gen.cpp)
REFUSED, WRONG_COOKIE = 40004, 40005
REQUEST, RESPONSE = 40, 1000
failures = []
passes = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    (passes if ok else failures).append(what)


def frames(path):
    out = subprocess.run(
        ["tshark", "-r", path, "-o", "tcp.check_checksum:TRUE", "-o", "ip.check_checksum:TRUE",
         "-T", "fields", "-E", "separator=|"] + sum([["-e", f] for f in FIELDS], []),
        check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        v = dict(zip(FIELDS, line.split("|")))
        rows.append({
            "src": v["ip.src"] or v["ipv6.src"],
            "sport": int(v["tcp.srcport"]), "dport": int(v["tcp.dstport"]),
            "flags": int(v["tcp.flags"], 16), "seq": int(v["tcp.seq_raw"]),
            "ack": int(v["tcp.ack_raw"]), "len": int(v["tcp.len"]),
            "mss": v["tcp.options.mss_val"], "wscale": v["tcp.options.wscale.shift"],
            "sack": v["tcp.options.sack_perm"] != "", "ts": v["tcp.options.timestamp.tsval"] != "",
            "tcp_ok": v["tcp.checksum.status"] == "1",
            "ip_ok": v["ip.checksum.status"] in ("1", ""),  # IPv6 has none
        })
    return rows


def port_of(f):
    return f["sport"] if f["dport"] == 80 else f["dport"]


def main(work):
    two = frames(work + "/two-way.pcap")
    passed = frames(work + "/pass.pcap")
    dropped = frames(work + "/drop.pcap")
    answers = frames(work + "/answers.pcap")
    stats = json.load(open(work + "/stats.json"))

    isn = {port_of(f): f["seq"] for f in two if f["flags"] == SYN}
    server_isn = {port_of(f): f["seq"] for f in two if f["flags"] == SYN | ACK}
    cookie = {}
    check(len(answers) == 6, "6 SYNs answered (%d)" % len(answers))
    for a in answers:
        p = port_of(a)
        cookie[p] = a["seq"]
        check(a["flags"] == SYN | ACK and a["ack"] == isn[p] + 1,
              "port %d: the SYN-ACK acknowledges the client's ISN + 1" % p)
        mss = "1440" if ":" in a["src"] else "1460"  # announce.mss is IPv4's; IPv6 20 less
        check(a["mss"] == mss and a["wscale"] == "7" and a["sack"] and not a["ts"],
              "port %d: the SYN-ACK answers MSS %s, window scale and SACK-permitted, no "
              "timestamps" % (p, mss))
    for f in passed + answers:
        check(f["tcp_ok"] and f["ip_ok"], "%s:%d -> %d: checksums good" % (f["src"], f["sport"],
                                                                          f["dport"]))

    for p in SERVED:
        mine = [f for f in passed if port_of(f) == p]
        to_server = [f for f in mine if f["dport"] == 80]
        to_client = [f for f in mine if f["sport"] == 80]
        delta = (cookie[p] - server_isn[p]) % 2**32
        syn = [f for f in to_server if f["flags"] == SYN]
        check(len(syn) == 1 and syn[0]["seq"] == isn[p] and syn[0]["mss"] == "1460" and
              syn[0]["wscale"] == "7" and syn[0]["sack"],
              "port %d: the server got a SYN with the client's ISN and options" % p)
        acks = [f for f in to_server if f["flags"] == ACK and f["len"] == 0 and
                f["seq"] == isn[p] + 1 and f["ack"] == server_isn[p] + 1]
        check(len(acks) == 1, "port %d: the server's SYN-ACK was answered with the ACK" % p)
        held = [f for f in to_server if f["len"] == REQUEST]
        check(len(held) == 1 and held[0]["seq"] == isn[p] + 1 and
              held[0]["ack"] == server_isn[p] + 1,
              "port %d: the request held during the handshake went on, translated" % p)
        data = [f for f in to_client if f["len"] == RESPONSE]
        check(len(data) == 1 and data[0]["seq"] == (server_isn[p] + 1 + delta) % 2**32 ==
              cookie[p] + 1 and data[0]["ack"] == isn[p] + 1 + REQUEST,
              "port %d: the response reached the client in its sequence space" % p)
        fins = [f for f in to_server if f["flags"] & FIN]
        check(len(fins) == 1 and fins[0]["ack"] == server_isn[p] + 1 + RESPONSE,
              "port %d: the client's FIN acknowledges the response in the server's space" % p)
        last = [f for f in to_server if f["flags"] == ACK and f["seq"] == isn[p] + 2 + REQUEST]
        check(len(last) == 1 and last[0]["ack"] == server_isn[p] + 2 + RESPONSE,
              "port %d: the last ACK acknowledges the server's FIN" % p)
        check(not any(port_of(f) == p and f["dport"] == 80 and f["flags"] != SYN
                      for f in dropped), "port %d: nothing of the connection dropped" % p)

    rst = [f for f in passed if port_of(f) == REFUSED and f["flags"] & RST]
    check(len(rst) == 1 and rst[0]["seq"] == cookie[REFUSED] + 1,
          "refused: the server's RST reached the client at its next expected number")
    check(sum(1 for f in dropped if port_of(f) == REFUSED and f["len"] == REQUEST) == 1,
          "refused: the request held for it was dropped")
    wrong = [f for f in passed if port_of(f) == WRONG_COOKIE and f["flags"] == ACK]
    check(len(wrong) == 1 and wrong[0]["ack"] != cookie[WRONG_COOKIE] + 1,
          "wrong cookie: its ACK passed on as it came")

    expect = {"proxy_opened": 5, "proxy_established": 4, "proxy_server_refused": 1,
              "proxy_server_timeout": 0, "proxy_table_full": 0, "proxy_cookie_failed": 1,
              "proxy_held": 5, "proxy_held_dropped": 0, "proxy_translated": 20,
              "proxy_untranslatable": 0}
    for k, v in expect.items():
        check(stats.get(k) == v, "stats %s == %d (%s)" % (k, v, stats.get(k)))
    check(stats["answers_by_kind"]["syn_proxy"] == 6, "stats answers_by_kind.syn_proxy == 6")
    check(stats["rules"][0]["verified"] == 5, "rule web verified 5 sources (%s)" %
          stats["rules"][0]["verified"])
    print("%d passed, %d failed" % (len(passes), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
