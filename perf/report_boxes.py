#!/usr/bin/python3
"""The boxes case's report (issue 26): the overshoot of a shared limit against its bound from 2
to 64 boxes and per sync interval, what the boxes pass shared and unshared, and the store's
cost per box; a picture, and the Markdown for docs/cluster.md.

    perf/report_boxes.py RESULTS.json [--out DIR]

Rewrites boxes.svg and boxes.md from a run of perf/harness_boxes.py (which calls this itself)
and prints each row's check.
"""
import argparse
import json
import math
import os
import sys
import textwrap

from report_pictures import pyplot

COLOURS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown")


def num(v, fmt="{:,.0f}"):
    return "-" if v is None else fmt.format(v)


def by_cell(results):
    return {(r["boxes"], r["sync_ms"]): r for r in results["shared"]}


def axes_of(results):
    boxes = sorted({r["boxes"] for r in results["shared"]} |
                   {r["boxes"] for r in results["unshared"]})
    syncs = sorted({r["sync_ms"] for r in results["shared"]})
    return boxes, syncs


# ---- The check ----

def print_checks(results):
    """One line per shared row: PASS when the worst excess after the join is within the
    bound's cluster term, FAIL otherwise; True when every row passed."""
    ok = True
    for r in sorted(results["shared"], key=lambda r: (r["boxes"], r["sync_ms"])):
        good = r["worst_excess"] is not None and r["worst_excess"] <= r["bound_term"]
        ok &= good
        print("%s  %2d boxes, sync %3d ms: worst excess %5s %s bound %6d (%3.0f%%); whole run "
              "%5s; %4.0f/s passed after %d ms, longest pause %s" % (
                  "PASS" if good else "FAIL", r["boxes"], r["sync_ms"], r["worst_excess"],
                  "<=" if good else "> ", r["bound_term"],
                  100.0 * r["worst_excess"] / r["bound_term"], r["worst_excess_whole_run"],
                  r["passed_rate_steady"], r["skip_ms"], seconds(r["longest_pause_ms"])))
    for f in results.get("failures", []):
        print("FAIL  %s: %s" % (f["case"], f["error"].splitlines()[0] if f["error"] else ""))
        ok = False
    return ok


# ---- The tables ----

def overshoot_table(results):
    boxes, syncs = axes_of(results)
    cells = by_cell(results)
    out = ["| boxes | " + " | ".join("S = %d ms" % s for s in syncs) + " |",
           "|---|" + "---|" * len(syncs)]
    for n in boxes:
        row = []
        for s in syncs:
            r = cells.get((n, s))
            row.append("-" if r is None else "%s / %s" % (num(r["worst_excess"]),
                                                          num(r["bound_term"])))
        out.append("| %d | %s |" % (n, " | ".join(row)))
    return out


def passed_table(results):
    boxes, syncs = axes_of(results)
    cells = by_cell(results)
    unshared = {r["boxes"]: r for r in results["unshared"]}
    out = ["| boxes | " + " | ".join("shared, S = %d ms" % s for s in syncs) +
           " | not shared |", "|---|" + "---|" * (len(syncs) + 1)]
    for n in boxes:
        row = []
        for s in syncs:
            r = cells.get((n, s))
            row.append("-" if r is None else "%s, %s" % (num(r["passed_rate_steady"]),
                                                         seconds(r["longest_pause_ms"])))
        u = unshared.get(n)
        row.append(num(u["passed_rate_steady"]) if u else "-")
        out.append("| %d | %s |" % (n, " | ".join(row)))
    return out


def seconds(ms):
    return "%.0f ms" % ms if ms < 1000 else "%.1f s" % (ms / 1000)


def store_rows(store):
    """Per K and S: the steady sync's figures per second."""
    rows = []
    for k in store.get("rows", []):
        steady, pull = k["steady"], k["pull"]
        for s in store["sync_ms"]:
            per_s = 1000.0 / s
            rows.append({"keys": k["keys"], "sync_ms": s, "round_trips": per_s,
                         "commands": steady["commands_per_sync"] * per_s,
                         "out_bytes": steady["sent_bytes"] * per_s,
                         "in_bytes_per_other": k["line_bytes"] * per_s,
                         "in_bytes_fixed": (pull["received_bytes"] - k["line_bytes"]) * per_s})
    return rows


def rate_bytes(v):
    for unit, div in (("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if v >= div:
            return "%.3g %s" % (v / div, unit)
    return "%.0f B/s" % v


def store_table(store):
    rtt = {k["keys"]: k["steady"]["rtt_ms"] for k in store.get("rows", [])}
    out = ["| shared keys K | S | round trips/s | Redis commands/s (in the script) | "
           "out, bytes/s | in, bytes/s from each other box | "
           "one sync's round trip (measured, 2 boxes) |",
           "|---|---|---|---|---|---|---|"]
    for r in store_rows(store):
        over = rtt[r["keys"]] > r["sync_ms"]
        out.append("| %s | %d ms | %s | %s | %s | %s | %s%.2f ms%s |" % (
            num(r["keys"]), r["sync_ms"], num(r["round_trips"], "{:,.0f}"),
            num(r["commands"]), rate_bytes(r["out_bytes"]), rate_bytes(r["in_bytes_per_other"]),
            "**" if over else "", rtt[r["keys"]], " > S**" if over else ""))
    return out


def store_sync_table(store):
    """What one sync costs at each K, as measured: bytes, round trip and the store's time."""
    out = ["| shared keys K | bytes a key | commands | push K, read nothing: sent, round "
           "trip, store time | push nothing, read one box's K: received, round trip, store "
           "time | push K, read K: round trip, store time |", "|---|---|---|---|---|---|"]
    for k in store.get("rows", []):
        p, q, s = k["push"], k["pull"], k["steady"]
        out.append("| %s | %.1f | %s | %s B, %.2f ms, %.2f ms | %s B, %.2f ms, %.2f ms | "
                   "%.2f ms, %.2f ms |" % (
                       num(k["keys"]), k["bytes_per_key"], commands_text(s),
                       num(p["sent_bytes"]), p["rtt_ms"], p["store_us"] / 1e3,
                       num(q["received_bytes"]), q["rtt_ms"], q["store_us"] / 1e3,
                       s["rtt_ms"], s["store_us"] / 1e3))
    return out


STORE_BOXES = (2, 16, 64)
STORE_TOTAL_SYNC_MS = 100


def store_busy_ms(k, boxes):
    """The store's time for one sync of every box (estimated from the 2-box measurements):
    each box's sync is a steady one (push K, read one box's K) plus, for each further box,
    what reading one more push adds (a pull less an idle sync)."""
    more = max(0.0, k["pull"]["store_us"] - k["idle"]["store_us"])
    return boxes * (k["steady"]["store_us"] + (boxes - 2) * more) / 1e3


def store_total_table(store):
    rows = store.get("rows", [])
    s = STORE_TOTAL_SYNC_MS
    out = ["| boxes N | " + " | ".join("K = %s: store busy, out of the store" % num(k["keys"])
                                       for k in rows) + " |", "|---|" + "---|" * len(rows)]
    for n in STORE_BOXES:
        cells = []
        for k in rows:
            busy = store_busy_ms(k, n)
            egress = n * (n - 1) * k["line_bytes"] * 1000.0 / s
            share = 100 * busy / s
            cells.append("%s%s%% of S%s, %s" % (
                "**" if busy > s else "", "%.1f" % share if share < 10 else "{:,.0f}".format(share),
                "**" if busy > s else "", rate_bytes(egress)))
        out.append("| %d | %s |" % (n, " | ".join(cells)))
    return out


def commands_text(s):
    xadd = s["commands"].get("xadd", 0)
    return "%d (%d XADD)" % (s["commands_per_sync"], xadd)


def markdown(results):
    t = results["trace"]
    r = results["rule"]
    shared = results["shared"]
    worst = max(shared, key=lambda x: x["excess_over_bound"]) if shared else None
    over = [x for x in shared if not x["within_bound"]]
    out = [
        "Measured with `floodgate replay --boxes N --sync-ms S` (`perf/harness_boxes.py`, "
        "%s): %d s of UDP to one destination from %s sources at %s frames/s, under one rule "
        "`key: dst`, %d/s, burst %d, `share: cluster`. Worst excess: the most frames passed "
        "in any window beyond what one GCRA would pass (b + floor(W / T)), counted after the "
        "join (the first 2 S + 1 s left out); bound: the term (N - 1) * (b + ceil(S / T)) "
        "(negative: no window used the whole burst). %s%s." % (
            results["date"][:10], t["seconds"], num(t["sources"]), num(t["frames_per_s"]),
            r["rate_per_s"], r["burst"],
            "**%d of %d measured excesses are over their bound**" % (len(over), len(shared))
            if over else "Every measured excess is within its bound",
            "" if worst is None else "; the nearest is %s of %s (%d boxes, S = %d ms)" % (
                num(worst["worst_excess"]), num(worst["bound_term"]), worst["boxes"],
                worst["sync_ms"])),
        ""]
    if shared:
        whole = max(shared, key=lambda x: x["worst_excess_whole_run"] / x["bound_term"])
        over_whole = [x for x in shared if x["worst_excess_whole_run"] > x["bound_term"]]
        out[-2] += (" Counted over the whole trace instead (the boxes alone for 2 S, then the "
                    "join), %s; the nearest is %s of %s (%d boxes, S = %d ms)." % (
                        "**%d are over their bound**" % len(over_whole) if over_whole else
                        "every excess is within its bound too", num(whole[
                            "worst_excess_whole_run"]), num(whole["bound_term"]),
                        whole["boxes"], whole["sync_ms"]))
    out += ["Worst excess / bound:", ""]
    out += overshoot_table(results)
    out += ["", "Frames passed per second after the join, and the longest time without one "
            "(the limit is %d/s; %s/s offered):" % (r["rate_per_s"], num(t["frames_per_s"])),
            ""]
    out += passed_table(results)
    out.append("")
    paused = max(shared, key=lambda x: x["longest_pause_ms"]) if shared else None
    if paused is not None and paused["longest_pause_ms"] >= 1000:
        out += ["Between two syncs a box knows only what it admitted itself: while its own "
                "sources send less than the limit, it passes them all. With many boxes and a "
                "long S the cluster then passes what is offered until the sync, is charged it "
                "all at once, and passes nothing for seconds: at %d boxes and S = %d ms the "
                "longest pause is %s. Over a %d s trace the rate then depends on where the "
                "pauses fall: %s/s after the join, %s/s over the whole trace." % (
                    paused["boxes"], paused["sync_ms"], seconds(paused["longest_pause_ms"]),
                    t["seconds"], num(paused["passed_rate_steady"]),
                    num(paused["passed_rate_whole_run"])), ""]
    store = results.get("store", {})
    if store.get("rows"):
        one = {k["keys"]: k for k in store["rows"]}
        c = statistics_bytes_per_key(store)
        cmds = sorted({k["steady"]["commands_per_sync"] for k in store["rows"]})
        out += [
            "The store's cost per box. A sync is one round trip (one EVALSHA) every S; inside "
            "it Redis runs TYPE twice, TIME, ZADD, ZREMRANGEBYSCORE, ZCARD, XRANGE and one XADD "
            "per MiB pushed (%s commands a sync here; XREVRANGE once more when no box pushed "
            "since the box's last sync). Each box pushes ~%.0f bytes per shared key that "
            "admitted packets since its last sync, a line `rule\\tkey\\tpackets\\n` (%.1f "
            "to %.1f bytes here: `total`, a /32, 1 to 99 packets), and reads the same from each "
            "other box. Per box: "
            "round trips/s = 1000 / S ms, out = K * %.0f B / S, in = (N - 1) * K * %.0f B / S."
            % (" or ".join(str(int(x)) for x in cmds), c,
               min(k["bytes_per_key"] for k in store["rows"]),
               max(k["bytes_per_key"] for k in store["rows"]), c, c), ""]
        out += store_table(store)
        out += ["", "One sync, measured against redis-server %s on a Unix socket (medians; "
                "store time: the EVALSHA's own time in INFO commandstats):" % store["redis"], ""]
        out += store_sync_table(store)
        out += ["", "The store serves every box and is one thread: every S it runs N syncs and "
                "sends N * (N - 1) * K * %.0f bytes. Estimated from the measurements above, at "
                "S = %d ms (bold: more than S, the store cannot keep up):" % (
                    c, STORE_TOTAL_SYNC_MS), ""]
        out += store_total_table(store)
        out.append("")
        big = one.get(max(one))
        if big:
            limit = 32 << 20
            out += ["A box reads at most 32 MiB (and 1,024 entries) a sync: with K = %s keys "
                    "it keeps up with at most %d other boxes." % (
                        num(big["keys"]), limit // max(1, big["line_bytes"])), ""]
    return out


def statistics_bytes_per_key(store):
    rows = [k for k in store["rows"] if k["keys"] >= 1000] or store["rows"]
    return sum(k["line_bytes"] for k in rows) / sum(k["keys"] for k in rows)


# ---- The picture ----

def figure(results, path):
    plt = pyplot()
    if plt is None:
        return False
    from matplotlib.ticker import FuncFormatter
    plain = FuncFormatter(lambda v, _: "{:,.0f}".format(v))
    boxes, syncs = axes_of(results)
    cells = by_cell(results)
    fig, (ex, rate) = plt.subplots(1, 2, figsize=(12, 4.8))
    values = []
    for colour, s in zip(COLOURS, syncs):
        pts = [(n, cells[(n, s)]) for n in boxes if (n, s) in cells]
        ex.plot([n for n, _ in pts], [r["worst_excess"] for _, r in pts], "o-", color=colour,
                label="S = %d ms, measured" % s)
        ex.plot([n for n, _ in pts], [r["bound_term"] for _, r in pts], "--", color=colour,
                label="S = %d ms, bound" % s)
        values += [r["worst_excess"] for _, r in pts]
        rate.plot([n for n, _ in pts], [r["passed_rate_steady"] for _, r in pts], "o-",
                  color=colour, label="shared, S = %d ms" % s)
    # A negative excess (no window came within b of one GCRA) is drawn too: linear within
    # +-b, logarithmic beyond.
    burst = results["rule"]["burst"]
    ex.set_yscale("symlog", linthresh=burst, linscale=1.5)
    top = max(values + [r["bound_term"] for r in results["shared"]] + [burst])
    ex.set_ylim(min(values + [0]) - 10, top * 8)  # room for the legend above the lines
    ticks = [-burst, 0] + [10**k for k in range(2, int(math.log10(top * 8)) + 1)]
    ex.set_yticks([v for v in ticks if v >= min(values + [0]) - 10])
    ex.set_ylabel("worst excess over one GCRA (frames)")
    ex.set_title("overshoot of the shared limit after the join", fontsize=10)
    un = sorted(results["unshared"], key=lambda r: r["boxes"])
    rate.plot([r["boxes"] for r in un], [r["passed_rate_steady"] for r in un], "s-",
              color="black", label="not shared")
    rate.axhline(results["rule"]["rate_per_s"], color="grey", linestyle=":",
                 label="the limit, %d/s" % results["rule"]["rate_per_s"])
    rate.axhline(results["trace"]["frames_per_s"], color="grey", linestyle="-.",
                 label="offered, {:,}/s".format(results["trace"]["frames_per_s"]))
    rate.set_yscale("log")
    rate.set_ylabel("frames passed per second, after the join")
    rate.set_title("what the boxes pass, shared and not", fontsize=10)
    for ax in (ex, rate):
        ax.set_xscale("log", base=2)
        ax.set_xticks(boxes)
        ax.set_xticklabels([str(n) for n in boxes])
        ax.yaxis.set_major_formatter(plain)
        ax.set_xlabel("boxes N")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2 if ax is ex else 1, loc="upper left" if ax is ex else "best")
    fig.suptitle("floodgate replay --boxes N --sync-ms S: one key, %d/s burst %d, flooded at "
                 "{:,}/s".format(results["trace"]["frames_per_s"]) %
                 (results["rule"]["rate_per_s"], results["rule"]["burst"]))
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def wrapped(lines, width=100):
    """Paragraphs wrapped as docs/cluster.md's are; tables left whole."""
    out = []
    for line in lines:
        if line.startswith("|") or len(line) <= width:
            out.append(line)
        else:
            out += textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False)
    return out


def write_report(results, out):
    """boxes.svg and boxes.md in out; their paths."""
    written = []
    svg = os.path.join(out, "boxes.svg")
    if figure(results, svg):
        written.append(svg)
    md = os.path.join(out, "boxes.md")
    with open(md, "w") as f:
        f.write("\n".join(wrapped(markdown(results))))
    written.append(md)
    return written


def write_all(results, out):
    """boxes-DATE.json (the run's date; a later run the same day replaces it), then the
    report; every path written."""
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "boxes-%s.json" % results["date"][:10])
    with open(path, "w") as f:
        json.dump(results, f, indent=1)
    return [path] + write_report(results, out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--out", help="default: beside RESULTS.json")
    args = ap.parse_args()
    with open(args.results) as f:
        results = json.load(f)
    for path in write_report(results, args.out or os.path.dirname(os.path.abspath(
            args.results))):
        print(path)
    return 0 if print_checks(results) else 1


if __name__ == "__main__":
    sys.exit(main())
