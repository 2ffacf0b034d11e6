"""The scaling and cores cases' pictures, drawn with matplotlib into DATE-keys.png and the like."""
import os

from report_format import PERF_DIR, mpps_of_ns


def count(n):
    for div, suffix in ((1 << 20, "M"), (1 << 10, "K")):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, suffix)
    for div, suffix in ((1000000, "M"), (1000, "K")):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, suffix)
    return str(n)


def pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def picture(r, what, draw):
    """Draws one figure with draw(plt) into DATE-what.png beside the run's JSON; the Markdown
    line that shows it (relative to RESULTS.md), or a note when matplotlib is missing."""
    plt = pyplot()
    if plt is None:
        return ["(No picture: matplotlib is not installed; `apt-get install python3-matplotlib`.)",
                ""]
    png = os.path.splitext(os.path.abspath(r["_path"]))[0] + "-" + what + ".png"
    fig = draw(plt)
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return ["![%s](%s)" % (what, os.path.relpath(png, PERF_DIR)), ""]


def two_panels(plt, title):
    fig, (ns_ax, mpps_ax) = plt.subplots(1, 2, figsize=(10, 4))
    fig.suptitle(title)
    ns_ax.set_ylabel("ns per packet")
    mpps_ax.set_ylabel("Mpps (one core, decision only)")
    for ax in (ns_ax, mpps_ax):
        ax.grid(True, alpha=0.3)
    return fig, ns_ax, mpps_ax


def plot_ns_and_mpps(ns_ax, mpps_ax, x, ns, label, fmt="o-", **style):
    """One series on both panels: ns per packet, and the Mpps it makes on one core."""
    line = ns_ax.plot(x, ns, fmt, label=label, **style)[0]
    mpps_ax.plot(x, [mpps_of_ns(v) for v in ns], fmt, label=label, **style)
    return line


def x_axis(axes, ticks, labels, xlabel, log2=False, legend_size=None):
    """The same x axis and a legend on each panel."""
    for ax in axes:
        if log2:
            ax.set_xscale("log", base=2)
        ax.set_xticks(ticks)
        ax.set_xticklabels(labels)
        ax.set_xlabel(xlabel)
        ax.legend(fontsize=legend_size)


def finish(fig, axes):
    """From 0 up, once everything is drawn (set before, the limit would stop autoscaling)."""
    for ax in axes:
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    return fig


def keys_figure(plt, t, keys):
    """Live keys: the decision admitted and refused."""
    fig, ns_ax, mpps_ax = two_panels(plt, "Decision cost as live keys grow")
    for regime, label in ((0, "admitted"), (1, "refused")):
        plot_ns_and_mpps(ns_ax, mpps_ax, keys, [t[k][regime]["ns"] for k in keys], label)
    x_axis((ns_ax, mpps_ax), keys, [count(k) for k in keys], "live keys", log2=True)
    return finish(fig, (ns_ax, mpps_ax))


def rules_figure(plt, t, sets, all_match):
    """Matching rules per packet, the sets where not every rule matches marked apart."""
    fig, ns_ax, mpps_ax = two_panels(plt, "Decision cost as matching rules grow")
    x = [k[1] for k in all_match]
    for regime, label in ((0, "admitted"), (1, "refused")):
        line = plot_ns_and_mpps(ns_ax, mpps_ax, x, [t[k][regime]["ns"] for k in all_match],
                                label)
        for k in sets:
            if k[0] != k[1]:
                plot_ns_and_mpps(ns_ax, mpps_ax, [k[1]], [t[k][regime]["ns"]],
                                 "%s, %d rules, %d matching" % (label, k[0], k[1]), "s",
                                 color=line.get_color(), mfc="none", ms=10)
    x_axis((ns_ax, mpps_ax), x, [str(n) for n in x], "rules matching each packet", log2=True,
           legend_size=7)
    return finish(fig, (ns_ax, mpps_ax))


def prefixes_figure(plt, t, entries):
    """Allow/block prefixes, IPv4 and IPv6."""
    fig, ns_ax, mpps_ax = two_panels(plt, "Decision cost as allow/block prefixes grow")
    x = list(range(len(entries)))
    for fam, label in ((0, "IPv4"), (1, "IPv6")):
        plot_ns_and_mpps(ns_ax, mpps_ax, x, [t[e][fam]["ns"] for e in entries], label)
    x_axis((ns_ax, mpps_ax), x, [count(e) for e in entries], "allow + block entries")
    return finish(fig, (ns_ax, mpps_ax))


def workers_figure(plt, workers, merge):
    """One worker beside two, and the merge per key by part."""
    n = (1 if workers else 0) + (1 if merge else 0)
    fig, axes = plt.subplots(1, n, figsize=(5 * n + 1, 4))
    axes = list(axes) if n > 1 else [axes]
    if workers:
        ax = axes.pop(0)
        names = [w["peer"].replace(", ", ",\n") for w in workers]
        vals = [(w["median_pps"] or 0) / 1e6 for w in workers]
        ax.bar(names, vals, color=["C0", "C1", "C2"][:len(vals)])
        for i, v in enumerate(vals):
            ax.text(i, v, "%.2f" % v, ha="center", va="bottom")
        ax.set_ylabel("Mpps (mix b, net_pcap to net_null)")
        ax.set_title("floodgate run, 1 and 2 workers on 2 CPUs")
        ax.tick_params(axis="x", labelsize=8)
    if merge:
        ax = axes.pop(0)
        ms = sorted(merge, key=lambda b: b["args"]["keys"])
        ks = [b["args"]["keys"] for b in ms]
        bottom = [0.0] * len(ms)
        for part in ("publish", "forward", "apply"):
            v = [b.get(part + "_ns_per_key", 0) for b in ms]
            ax.bar([count(k) for k in ks], v, bottom=bottom, label=part)
            bottom = [x + y for x, y in zip(bottom, v)]
        ax.set_xlabel("keys per interval")
        ax.set_ylabel("ns per key")
        ax.set_title("The merge per key, by part")
        ax.legend()
    fig.tight_layout()
    return fig


def cores_figure(plt, mixes):
    """The cores case: CPU per packet against workers, steering and round robin, one panel per
    mix. Both axes logarithmic: rr grows with N (every key on every core) by tens of times,
    and a flat steering line must still show its few percent."""
    from matplotlib.ticker import FuncFormatter, NullFormatter  # here: pyplot() may have none
    plain = FuncFormatter(lambda v, _: "%g" % v)
    fig, axes = plt.subplots(1, len(mixes), figsize=(4.5 * len(mixes) + 1, 4), squeeze=False)
    for ax, m in zip(axes[0], mixes):
        for spread, label in (("steering", "steering (owner core)"),
                              ("rr", "rr (every key shared)")):
            pts = [(row["workers"], row[spread]["cpu_ns_per_packet"]) for row in m["rows"]
                   if row.get(spread, {}).get("cpu_ns_per_packet") is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=label)
        ns = [row["workers"] for row in m["rows"]]
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(ns)
        ax.set_xticklabels([str(n) for n in ns])
        ax.yaxis.set_major_formatter(plain)
        lo, hi = ax.get_ylim()
        # Within one decade the major ticks may be none: label the minor ones instead.
        ax.yaxis.set_minor_formatter(plain if hi / lo < 10 else NullFormatter())
        ax.set_xlabel("workers")
        ax.set_ylabel("CPU ns per packet (user + sys)")
        ax.set_title("mix " + m["mix"].replace("-aggregate", " under an aggregate rule"),
                     fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("floodgate replay: CPU per packet as workers grow")
    fig.tight_layout()
    return fig
