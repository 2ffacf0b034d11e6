#!/usr/bin/env python3
"""The asserts of tests/lab/syn_proxy_faults.sh, one case at a time.

  syn_proxy_faults_check.py CASE WORK   the case's asserts on WORK/CASE/result.json (what
                                        syn_proxy_faults.py run saw) and WORK/CASE/stats.json
                                        (the stats floodgate wrote on exit): a PASS or FAIL
                                        line each; exit 1 if any fails

CASE: refused, slow, vanish, acks or storm. The expected counts come from what the clients did
and saw (syn_proxy_faults.py's case_* functions), never from floodgate.
"""
import json
import os
import sys

from syn_proxy_faults import (  # tests/lab/syn_proxy_faults.py: the cases' figures
    CLIENT_OPTIONS, HELD_PER_FLOW, RAW_SEGMENTS, SLOW_RAW, STORM_SRCS, STORM_TABLE, U32,
    read_stats, snapshot)

class Checker:
    def __init__(self, name):
        self.name, self.failed, self.count = name, 0, 0

    def eq(self, what, got, want):
        self.true(f"{what} = {got}" + ("" if got == want else f", want {want}"), got == want)

    def true(self, what, ok, detail=""):
        self.count += 1
        self.failed += not ok
        detail = f" ({detail})" if detail else ""
        print(f"{'PASS' if ok else 'FAIL'} {self.name}: {what}{detail}")

    def counters(self, where, snap, want):
        if snap is None:
            self.true(f"{where}: stats read", False, "no stats")
            return
        for k, v in want.items():
            self.eq(f"{where} {k}", snap.get(k), v)

    def waited(self, label, w):
        self.true(f"{label}: {w['want']} within a bounded wait", w["ok"],
                  f"after {w['after_s']} s" + ("" if w["ok"] else f"; last {w['stats']}"))

    def reset(self, who, v):
        """A kernel client whose handshake completed with floodgate and whose socket was reset
        by floodgate's one RST, sequence number the cookie + 1 (the only one it takes)."""
        self.true(f"{who}: handshake completed with floodgate (its kernel ACKed the cookie)",
                  v["handshake_acked"])
        self.true(f"{who}: its socket got ECONNRESET", v.get("outcome") == "reset",
                  f"{v.get('outcome')}" + (f" at {v['at']}" if "at" in v else "")
                  + (f": {v['error']}" if v.get("error") else ""))
        self.eq(f"{who}: RSTs reaching it", len(v["rst_seqs"]), 1)
        self.true(f"{who}: the RST's seq is the cookie + 1",
                  v["cookie"] is not None and v["rst_seqs"] == [(v["cookie"] + 1) & U32],
                  f"cookie {v['cookie']}, RST seqs {v['rst_seqs']}")


def check_refused(c, r, final):
    n = r["attempts"]
    for src, v in r["clients"].items():
        c.reset(src, v)
        c.eq(f"{src}: floodgate's SYNs at the server", v["server_syns"], 1)
        c.eq(f"{src}: the server's RSTs", v["server_rsts"], 1)
        c.eq(f"{src}: data segments it sent", v["data_segments"], 0)
    c.waited("refusals counted", r["refused"])
    c.waited("failed connections expired", r["expired"])
    c.counters("final", final, {
        "answers_by_kind.syn_proxy": n, "proxy_opened": n, "proxy_server_refused": n,
        "proxy_established": 0, "proxy_server_timeout": 0, "proxy_table_full": 0,
        "proxy_cookie_failed": 0, "proxy_held": 0, "proxy_translated": 0, "proxy_closed": 0,
        "proxy_expired": n, "proxy_connections": 0, "rules.0.verified": n})


def check_slow(c, r, final):
    n = r["attempts"]
    held = dropped = 0
    for src, v in r["clients"].items():
        who = f"{src} ({'eager' if v['eager'] else 'patient'})"
        c.true(f"{who}: connect() completed", v["connect_error"] is None, v["connect_error"] or "")
        c.reset(who, v)
        print(f"INFO slow: {who}: reset {v.get('reset_after_send_s')} s after its send, "
              f"{v['data_segments']} data segment(s) sent")
        c.eq(f"{who}: floodgate's SYNs toward the silent server", v["server_syns"], 1)
        c.eq(f"{who}: its segments passed toward the silent server", v["at_server_other"], 0)
        # Every data segment it sent was held but the last, which got the RST (4 held at
        # most: past that, dropped).
        held += min(HELD_PER_FLOW, v["data_segments"] - 1)
        dropped += max(0, v["data_segments"] - 1 - HELD_PER_FLOW)
    raw = r["raw"]
    c.true(f"{SLOW_RAW} (raw): handshake with floodgate", raw.get("acked", False), str(raw))
    c.eq(f"{SLOW_RAW} (raw): floodgate's SYNs toward the silent server", raw.get("server_syns"), 1)
    c.eq(f"{SLOW_RAW} (raw): its segments passed toward the silent server",
         raw.get("at_server_other"), 0)
    c.eq(f"{SLOW_RAW} (raw): RSTs reaching it", raw.get("rsts"), 1)
    c.true(f"{SLOW_RAW} (raw): the RST answers its segment after the timeout, seq the cookie + 1",
           raw.get("rst_seq") is not None and raw["rst_seq"] == (raw["synack_seq"] + 1) & U32,
           f"cookie {raw.get('synack_seq')}, RST seq {raw.get('rst_seq')}")
    held += HELD_PER_FLOW
    dropped += RAW_SEGMENTS - HELD_PER_FLOW
    c.waited("server timeouts counted", r["timed_out"])
    c.waited("connections gone", r["ended"])
    c.counters("final", final, {
        "answers_by_kind.syn_proxy": n, "proxy_opened": n, "proxy_server_timeout": n,
        "proxy_established": 0, "proxy_server_refused": 0, "proxy_held": held,
        "proxy_held_dropped": dropped, "proxy_translated": 0, "proxy_closed": n,
        "proxy_expired": 0, "proxy_connections": 0})


def check_vanish(c, r, final):
    hs = r["handshake"]
    c.true("SYN-ACK from floodgate acknowledging ISN + 1", hs["synack"] and not hs["challenge"],
           str(hs))
    c.eq("SYN-ACK options (the rule's announcement, as offered)", hs.get("synack_options"),
         CLIENT_OPTIONS)
    c.waited("connection open", r["open"])
    c.counters("open", r["open"]["stats"],
               {"proxy_opened": 1, "proxy_established": 1, "proxy_connections": 1})
    c.eq("floodgate's SYNs at the server (client's ISN and options, from the cookie)",
         r["server_syns"], [{"seq": hs["isn"], "options": CLIENT_OPTIONS}])
    c.eq("the server's SYN-ACKs", r["server_synacks"], 1)
    c.eq("floodgate's ACKs to it", r["server_acks"], [{"seq": (hs["isn"] + 1) & U32, "len": 0}])
    c.waited("idle connection expired", r["expired"])
    c.eq("frames to the client after its SYN-ACK", r["to_client_after_synack"], [])
    c.counters("final", final, {
        "answers_by_kind.syn_proxy": 1, "proxy_opened": 1, "proxy_established": 1,
        "proxy_expired": 1, "proxy_closed": 0, "proxy_connections": 0, "proxy_translated": 0,
        "proxy_cookie_failed": 0, "proxy_server_timeout": 0, "rules.0.verified": 1})


def check_acks(c, r, final):
    n = r["sent"]
    c.waited("every ACK counted", r["counted"])
    c.eq("ACKs at the server", r["at_server"], n)
    c.eq("ACKs at the server unchanged (source, ports, seq, ack)", r["at_server_unchanged"], n)
    c.eq("flags at the server", r["at_server_flags"], ["A"])
    c.counters("final", final, {
        "proxy_cookie_failed": n, "proxy_opened": 0, "proxy_connections": 0,
        "proxy_table_full": 0, "proxy_translated": 0, "answered": 0, "dropped": 0,
        "answers_by_kind.syn_proxy": 0, "answers_by_kind.syn_cookie": 0, "cookie_failed": 0})


def check_storm(c, r, final):
    hs = r["clients"]
    proxied = [h["src"] for h in hs if h["synack"] and not h["challenge"]]
    challenged = [h for h in hs if h["synack"] and h["challenge"]]
    c.eq("clients answered", sum(1 for h in hs if h["synack"]), len(STORM_SRCS))
    c.eq("clients answered with a cookie SYN-ACK (c1-c5)", proxied, STORM_SRCS[:5])
    c.eq("clients challenged (c6-c10)", [h["src"] for h in challenged], STORM_SRCS[5:])
    for h in challenged:
        c.true(f"{h['src']}: the challenge acknowledges another number than ISN + 1, window 0, "
               "no options", h["synack_window"] == 0 and h["synack_options"] == {},
               f"ack {h['synack_ack']}, ISN {h['isn']}")
        c.true(f"{h['src']}: verified by its RST", h.get("verified", False))
        rt = h.get("retry", {})
        c.true(f"{h['src']}: its next SYN went to the server as sent, the server's SYN-ACK back",
               rt.get("synack") and not rt.get("challenge") and rt.get("syn_at_server"), str(rt))
    c.waited("four connections open, c5's ACK refused", r["four_open"])
    c.eq("floodgate's SYNs at the server, c1-c10", r["server_syns_from_floodgate"],
         [1] * STORM_TABLE + [0] * (len(STORM_SRCS) - STORM_TABLE))
    c.waited("after the storm", r["after"])
    n_proxy, n_chal = len(proxied), len(challenged)
    c.counters("final", final, {
        "answers_by_kind.syn_proxy": n_proxy, "answers_by_kind.syn_cookie": n_chal,
        "proxy_opened": STORM_TABLE, "proxy_established": STORM_TABLE,
        "proxy_table_full": (n_proxy - STORM_TABLE) + n_chal,
        "proxy_connections": STORM_TABLE, "syn_auth_replies": n_chal, "cookie_failed": 0,
        "proxy_cookie_failed": n_chal, "rules.0.verified": STORM_TABLE + n_chal,
        "proxy_server_refused": 0, "proxy_server_timeout": 0})


CHECKS = {"refused": check_refused, "slow": check_slow, "vanish": check_vanish,
          "acks": check_acks, "storm": check_storm}


def check(name, work):
    d = os.path.join(work, name)
    with open(os.path.join(d, "result.json")) as f:
        r = json.load(f)
    stats = read_stats(os.path.join(d, "stats.json"))
    c = Checker(name)
    CHECKS[name](c, r, snapshot(stats))
    # Not asserted (docs/answers.md: a segment the proxy consumes is counted in the proxy's
    # counters, not in dropped): the ports' counts beside the NICs' own, for the record.
    if stats and len(stats.get("nic", [])) == 2:
        p, nic = stats["ports"], stats["nic"]
        print(f"INFO {name}: ports outside_to_inside tx {p['outside_to_inside']['tx']}, inside "
              f"NIC tx {nic[1]['tx_packets']} (also floodgate's ACKs to servers); "
              f"inside_to_outside tx {p['inside_to_outside']['tx']} + answers_to_outside tx "
              f"{p['answers_to_outside']['tx']}, outside NIC tx {nic[0]['tx_packets']}; "
              f"rx_missed {nic[0]['rx_missed']} outside, {nic[1]['rx_missed']} inside")
    print(f"{name}: {c.count - c.failed}/{c.count} passed")
    return 1 if c.failed else 0

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in CHECKS:
        sys.exit(__doc__)
    sys.exit(check(sys.argv[1], sys.argv[2]))
