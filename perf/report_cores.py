"""The cores case's section (issue 25): replay's CPU per packet, key copies and peak memory from
1 to 64 workers, steering beside round robin, per mix; the issue's goals; a picture."""
from report_format import met, ratio
from report_pictures import cores_figure, picture

# Issue 25's goals: CPU per packet at 16 and 64 workers over 1 worker's (mixes b and a), and
# key copies at 16 workers over 1 worker's (mix b).
TARGET_CPU_16 = 1.15
TARGET_CPU_64 = 1.3
TARGET_COPIES_16 = 1.1
CPU_GOAL_MIXES = ("b", "a")
COPIES_GOAL_MIXES = ("b",)


def side(row, spread, key):
    """One spread's median of `key` at this row's workers, or None (not run, or failed)."""
    return row.get(spread, {}).get(key)


def over_one(rows, spread, key, workers):
    """The median at `workers` over the median at 1 worker."""
    by = {row["workers"]: row for row in rows}
    if 1 not in by or workers not in by:
        return None
    a, z = side(by[workers], spread, key), side(by[1], spread, key)
    return a / z if a is not None and z else None


def cpu_cell(s):
    """ns per packet, with the repetitions' lowest and highest in brackets."""
    if not s or s.get("cpu_ns_per_packet") is None:
        return "-"
    vals = [run["cpu_ns_per_packet"] for run in s["runs"]]
    text = "%.0f" % s["cpu_ns_per_packet"]
    return text + (" (%.0f-%.0f)" % (min(vals), max(vals)) if len(vals) > 1 else "")


def number(v, fmt="{:,.0f}"):
    return "-" if v is None else fmt.format(v)


COLUMNS = ("workers", "steering CPU ns/packet", "/ 1 worker",
           "steering net of start-up ns/packet", "/ 1 worker", "rr CPU ns/packet", "/ 1 worker",
           "rr / steering", "start-up CPU ms, steering / rr", "steering key copies",
           "/ 1 worker", "rr key copies", "steering peak RSS MB", "rr peak RSS MB",
           "entries per core, steering / rr")


def cells(rows, row):
    """One row of the table: COLUMNS' cells at row's number of workers."""
    n, st, rr = row["workers"], row.get("steering", {}), row.get("rr", {})
    a, z = st.get("cpu_ns_per_packet"), rr.get("cpu_ns_per_packet")

    def ms(x):
        return number(None if x.get("startup_cpu_s") is None else x["startup_cpu_s"] * 1e3)

    def mb(x):
        return number(x["peak_rss_kb"] / 1024 if x.get("peak_rss_kb") else None, "{:.0f}")
    return [str(n), cpu_cell(st), ratio(over_one(rows, "steering", "cpu_ns_per_packet", n)),
            number(st.get("net_cpu_ns_per_packet")),
            ratio(over_one(rows, "steering", "net_cpu_ns_per_packet", n)),
            cpu_cell(rr) if "skipped" not in rr or rr.get("runs") else "not run",
            ratio(over_one(rows, "rr", "cpu_ns_per_packet", n)),
            ratio(z / a if a and z else None), "%s / %s" % (ms(st), ms(rr)),
            number(st.get("key_copies")), ratio(over_one(rows, "steering", "key_copies", n)),
            number(rr.get("key_copies")), mb(st), mb(rr),
            "%s / %s" % (number(st.get("entries_per_core")), number(rr.get("entries_per_core")))]


def mix_table(m, h):
    rows = m["rows"]
    out = [h + " Cores: %s" % m["label"], "",
           "Rules `%s`; %s frames; distinct sources (the keys the tables must hold, summed "
           "over the cores): %s." % (m["config"], "{:,}".format(m["frames"]),
                                     "{:,}".format(m["keys"])), "",
           "| %s |" % " | ".join(COLUMNS), "|%s" % ("---|" * len(COLUMNS))]
    out += ["| %s |" % " | ".join(cells(rows, row)) for row in rows]
    out.append("")
    for spread, why in sorted(m.get("capped", {}).items()):
        out += ["%s: some runs left out (%s); its medians are of the repetitions that ran." % (
            spread, why), ""]
    return out


def goals(mixes):
    """Issue 25's goals, each (goal, measured, met) from the steering medians."""
    by = {m["mix"]: m["rows"] for m in mixes}
    rows = []
    for mix in CPU_GOAL_MIXES:
        for n, target in ((16, TARGET_CPU_16), (64, TARGET_CPU_64)):
            if mix in by:
                v = over_one(by[mix], "steering", "cpu_ns_per_packet", n)
                rows.append(("mix %s: CPU per packet at %d workers <= %.2f x at 1 (steering)" % (
                    mix, n, target), ratio(v), met(v, target, False)))
    for mix in COPIES_GOAL_MIXES:
        if mix in by:
            v = over_one(by[mix], "steering", "key_copies", 16)
            rows.append(("mix %s: key copies at 16 workers <= %.1f x at 1 (steering)" % (
                mix, TARGET_COPIES_16), ratio(v), met(v, TARGET_COPIES_16, False)))
    return rows


def cores(r, h):
    """The section, or nothing for a run without the cores case."""
    c = r.get("cores")
    if not c:
        return []
    slack, slack_entries = c.get("table_slack", [1.1, 1024])
    out = [h + " Cores: one more worker's cost (issue 25, `floodgate replay --workers N`)", "",
           "`floodgate replay --workers N --config RULES --in MIX --pass /dev/null --stats S "
           "--quiet` for N = %s: the pipeline and the merge on N virtual cores in one process, "
           "so its CPU time (user + sys of the child, from wait4) is all the N cores' work, on "
           "this machine's %d CPUs or any. CPU ns/packet is that time over the mix's packets, "
           "process start and reading the capture included, as the goals count it; *net of "
           "start-up* takes off each run's start-up, the CPU time of the same replay (rules, "
           "workers, spread) over the mix's first frame alone: tables, per-core state, reading "
           "the rules, whatever the packets. *steering*: `--spread steering` "
           "(each source prefix has one owner core, its keys are never published to the "
           "merge), tables sized for each core's share: `entries_per_core` = %.1f x keys / N "
           "+ %d. *rr*: `--spread rr`, round robin, every key shared and merged onto every core "
           "(the way before steering), so every table holds every key: %.1f x keys + %d. Key "
           "copies: the stats' `table.occupancy + table.reclaims`, summed over the cores: the "
           "keys inserted into the tables. Peak RSS: the process's maximum resident set. Each "
           "figure is the median of %d repetitions, rr and steering alternating (lowest-highest "
           "in brackets)." % (", ".join(str(n) for n in c["workers"]),
                              r["machine"]["cpus"], slack, slack_entries, slack, slack_entries,
                              r["settings"]["repetitions"])]
    if c.get("binary"):
        out[-1] += (" Every replay ran one copy of `%s` (built %s, SHA-256 %s...), made as the "
                    "case started." % (c["binary"]["path"].split("/build/")[-1],
                                       c["binary"]["built"], c["binary"]["sha256_16"]))
    out.append("")
    for m in c["mixes"]:
        out += mix_table(m, h)
    out += picture(r, "cores", lambda plt: cores_figure(plt, c["mixes"]))
    out += [h + " Cores: the goals of issue 25", "", "| goal | measured | |", "|---|---|---|"]
    out += ["| %s | %s | %s |" % g for g in goals(c["mixes"])]
    out.append("")
    return out
