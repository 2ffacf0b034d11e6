#!/usr/bin/python3
"""`floodgate replay --report` read back by a real browser: headless Chromium through Selenium.

The trace (tests/control/frames.py, microsecond timestamps this test chooses), 2.99 s of packet
time from 2023-11-14 22:13:20 UTC, sorted by time, no two frames at one instant:

  dns  udp/53, rate 10/s burst 5, key /32:
       198.18.1.1 every 10 ms from 0 (300 frames, 100/s: over its limit)
       198.18.1.2 every 250 ms from 1 ms (12 frames, 4/s: under it)
  web  tcp/80 SYNs, rate 20/s burst 4, action tcp-rst:
       198.18.2.1 every 20 ms from 3 ms (150 frames, 50/s: over)
       198.18.2.2 every 100 ms from 7 ms (30 frames, 10/s: under)

What each rule passes per bin is computed here, by a GCRA written from its definition (a key
admits a packet at t iff max(TAT, t) + T - t <= T * burst; an admitted one sets TAT to
max(TAT, t) + T), and the bin count and width from the rule the report documents (the
smallest width w of the 1-2-5 series of ns with floor((last - first) / w) + 1 <= 60): 60 bins
of 50 ms here. Neither is taken from floodgate.

The rules file's comment carries a <script> and the capture's name an & and a tag: both must be
shown as text, and the script must not run. The page must log no console error.

Prints TAP; skips (1..0 # SKIP) without Chromium, chromedriver or python3-selenium, or when not
root (replay's DPDK). Usage: test_report.py BUILD_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SRC, "tests", "control"))
sys.path.insert(0, os.path.join(SRC, "tests"))
import frames  # noqa: E402
from tap import check, plan  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
T0_US = 1_700_000_000 * 1_000_000
MAX_BINS = 60

RULES = """\
# Report test rules. <script>window.__fg_injected = 1</script> & "quotes" 'too' </pre>
rules:
  - name: dns
    match: { proto: udp, dst_port: 53 }
    limit: { rate: 10/s, burst: 5 }
  - name: web
    match: { proto: tcp, dst_port: 80 }
    limit: { rate: 20/s, burst: 4 }
    action: tcp-rst
"""
# Per rule: interval T (ns) and burst, as the rules say.
LIMITS = {"dns": (100_000_000, 5), "web": (50_000_000, 4)}
CAPTURE_NAME = "trace&<b>x.pcap"


def skip_reason():
    if not os.path.exists(CHROMIUM):
        return "no %s (apt-get install chromium)" % CHROMIUM
    if not os.path.exists(CHROMEDRIVER):
        return "no %s (apt-get install chromium-driver)" % CHROMEDRIVER
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "no selenium for %s (apt-get install python3-selenium)" % sys.executable
    if os.geteuid() != 0:
        return "floodgate replay needs root (DPDK)"
    return None


def trace():
    """(time_us, rule, source, frame) in time order."""
    out = []
    for k in range(300):
        out.append((k * 10_000, "dns", "198.18.1.1",
                    frames.udp4("198.18.1.1", "198.18.0.53", 1000 + k, 53)))
    for k in range(12):
        out.append((k * 250_000 + 1_000, "dns", "198.18.1.2",
                    frames.udp4("198.18.1.2", "198.18.0.53", 2000 + k, 53)))
    for k in range(150):
        out.append((k * 20_000 + 3_000, "web", "198.18.2.1",
                    frames.tcp4("198.18.2.1", "198.18.0.80", 3000 + k, 80)))
    for k in range(30):
        out.append((k * 100_000 + 7_000, "web", "198.18.2.2",
                    frames.tcp4("198.18.2.2", "198.18.0.80", 4000 + k, 80)))
    out.sort(key=lambda f: f[0])
    return out


def expected_layout(first_ns, last_ns):
    """The report's documented bin rule, written again here."""
    decade = 1
    while True:
        for m in (1, 2, 5):
            w = m * decade
            count = (last_ns - first_ns) // w + 1
            if count <= MAX_BINS:
                return w, count
        decade *= 10


def expected_bins(packets, first_ns, width_ns, count):
    """Per rule, per bin: [passed, refused], by an independent GCRA per (rule, source)."""
    tat = {}
    bins = {rule: [[0, 0] for _ in range(count)] for rule in LIMITS}
    for t_us, rule, source, _ in packets:
        now = t_us * 1000 + T0_US * 1000
        interval, burst = LIMITS[rule]
        base = max(tat.get((rule, source), 0), now)
        admit = base + interval - now <= interval * burst
        if admit:
            tat[(rule, source)] = base + interval
        bins[rule][(now - first_ns) // width_ns][0 if admit else 1] += 1
    return bins


def replay(build, args, timeout=120, cwd=None):
    p = subprocess.run([os.path.join(build, "dataplane", "floodgate"), "replay"] + args,
                       capture_output=True, text=True, timeout=timeout, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def charts_in(html):
    """{chart name: [bin attributes]} read from the HTML text itself (no browser)."""
    out = {}
    for m in re.finditer(r'<svg class="chart" ([^>]*)>(.*?)</svg>', html, re.S):
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))
        name = attrs.get("data-rule", attrs.get("data-series"))
        out[name] = [{k[5:]: int(v) for k, v in re.findall(r'(data-[\w-]+)="(\d+)"', g)}
                     for g in re.findall(r'<g class="bin" ([^>]*)>', m.group(2))]
    return out


def offline_checks(build, work, base_args):
    """Replays without the browser: several workers, one frame, timestamps out of order."""
    rules_path = os.path.join(work, "rules.yaml")
    stats_path = os.path.join(work, "stats-w.json")
    report_path = os.path.join(work, "report-w.html")
    code, _, err = replay(build, base_args + ["--workers", "2", "--stats", stats_path,
                                              "--report", report_path])
    ok = code == 0
    if ok:
        with open(stats_path) as f:
            stats = json.load(f)
        with open(report_path, encoding="utf-8") as f:
            charts = charts_in(f.read())
        wrong = ["%s %s: bins %d, STATS.json %d" % (r["name"], f, sum(b[f] for b in
                 charts[r["name"]]), r[f]) for r in stats["rules"]
                 for f in ("matched", "passed", "refused", "answered")
                 if sum(b[f] for b in charts[r["name"]]) != r[f]]
        wrong += ["totals %s" % f for f in ("packets", "passed", "dropped")
                  if sum(b[f] for b in charts["totals"]) != stats[f]]
        ok = not wrong
        err += "\n".join(wrong)
    check(ok, "--workers 2: every chart's bins sum to that run's STATS.json", err)

    def layout_of(times_us, name):
        trace_path = os.path.join(work, name + ".pcap")
        frames.write_pcap(trace_path, [frames.udp4("198.18.1.1", "198.18.0.53", 1, 53)] *
                          len(times_us), times_us)
        report_path = os.path.join(work, name + ".html")
        code, _, err = replay(build, ["--config", rules_path, "--in", trace_path, "--pass",
                                      os.devnull, "--quiet", "--report", report_path])
        if code != 0:
            return None, err
        with open(report_path, encoding="utf-8") as f:
            html = f.read()
        return html, err

    html, err = layout_of([T0_US + 123], "one")
    charts = charts_in(html or "")
    check(html and all(len(b) == 1 for b in charts.values()) and len(charts) == 3 and
          "1 bin of 1 ns" in html, "a capture of one frame has one bin (of 1 ns)", err)

    # The clock is the largest timestamp so far: it starts at the first frame's, a frame
    # earlier than it counts at it (bin 0), and the bins end with the largest.
    html, err = layout_of([T0_US + 1_000_000, T0_US + 500_000, T0_US + 2_000_000], "unordered")
    want_w, want_n = expected_layout((T0_US + 1_000_000) * 1000, (T0_US + 2_000_000) * 1000)
    charts = charts_in(html or "")
    totals = charts.get("totals", [])
    check(html and len(totals) == want_n and want_n == 51 and
          [b["packets"] for b in totals if b["packets"]] == [2, 1] and totals[0]["packets"] == 2
          and totals[0]["start-ns"] == (T0_US + 1_000_000) * 1000,
          "timestamps out of order: bins from the first frame's time to the largest (%d of %d "
          "ns), the earlier frame in bin 0" % (want_n, want_w), err)


def number(text):
    return int(text.replace(",", "").strip())


def browser_checks(driver, url, stats, packets, first_ns, width_ns, count, screenshot):
    from selenium.webdriver.common.by import By

    driver.get(url)
    check(CAPTURE_NAME in driver.title, "the page's title names the capture as text",
          driver.title)
    h1 = driver.find_element(By.TAG_NAME, "h1")
    check(CAPTURE_NAME in h1.text and not h1.find_elements(By.TAG_NAME, "b"),
          "the capture's name (with & and a tag) is shown as text, not markup", h1.text)

    bins = driver.find_element(By.ID, "bins")
    words = "%d bins of %s" % (count, "50 ms")
    check(number(bins.get_attribute("data-bins")) == count and
          number(bins.get_attribute("data-width-ns")) == width_ns and words in bins.text,
          "the bins are %d of %d ns, as the documented rule gives: '%s'" % (count, width_ns,
                                                                             words),
          bins.get_attribute("outerHTML"))

    charts = driver.find_elements(By.CSS_SELECTOR, "svg.chart")
    rules = [r["name"] for r in stats["rules"]]
    by_rule = {c.get_attribute("data-rule"): c for c in charts if c.get_attribute("data-rule")}
    totals = [c for c in charts if c.get_attribute("data-series") == "totals"]
    check(sorted(by_rule) == sorted(rules) and len(totals) == 1 and len(charts) == len(rules) + 1,
          "one chart per rule (%s) and one of all packets" % ", ".join(rules),
          [c.get_attribute("data-rule") for c in charts])

    # Every chart's bins: their count, their start times, and (read once, by script) values.
    read_bins = ("return Array.from(arguments[0].querySelectorAll('g.bin')).map(g => "
                 "Object.assign({}, g.dataset))")
    chart_bins = {}
    for c in charts:
        name = c.get_attribute("data-rule") or "totals"
        gs = driver.execute_script(read_bins, c)
        chart_bins[name] = gs
        starts = [int(g["startNs"]) for g in gs]
        check(len(gs) == count and number(c.get_attribute("data-bins")) == count and
              starts == [first_ns + i * width_ns for i in range(count)],
              "chart %s has %d bins (g.bin), starting every %d ns from the first frame"
              % (name, count, width_ns), "g.bin: %d, starts %s" % (len(gs), starts[:3]))
        visible = c.size
        check(visible["width"] > 600 and visible["height"] > 100,
              "chart %s is drawn (%dx%d px)" % (name, visible["width"], visible["height"]))

    # The totals shown equal STATS.json.
    cards = driver.find_elements(By.CSS_SELECTOR, "[data-field]:not([data-rule])")
    wrong = []
    for e in cards:
        field = e.get_attribute("data-field")
        if number(e.get_attribute("data-value")) != stats[field] or number(e.text) != stats[field]:
            wrong.append("%s: shown %s, STATS.json %d" % (field, e.text, stats[field]))
    fields = {e.get_attribute("data-field") for e in cards}
    need = {"packets", "passed", "dropped", "rate_limited", "block_hits", "malformed", "answered"}
    check(not wrong and need <= fields, "the totals shown (%s) equal STATS.json's"
          % ", ".join(sorted(fields)), "\n".join(wrong) + " missing: %s" % (need - fields))
    wrong = []
    for e in driver.find_elements(By.CSS_SELECTOR, "td[data-rule][data-field]"):
        rule = next(r for r in stats["rules"] if r["name"] == e.get_attribute("data-rule"))
        field = e.get_attribute("data-field")
        if number(e.text) != rule[field] or number(e.get_attribute("data-value")) != rule[field]:
            wrong.append("%s %s: shown %s, STATS.json %d" % (rule["name"], field, e.text,
                                                              rule[field]))
    check(not wrong, "every rule's matched, passed, refused, overruled, answered shown equals "
          "STATS.json's", "\n".join(wrong))

    # The bins add up to the totals.
    sums = {f: sum(int(g[f]) for g in chart_bins["totals"]) for f in ("packets", "passed",
                                                                       "dropped")}
    check(all(sums[f] == stats[f] for f in sums),
          "the bins of all packets sum to STATS.json's packets, passed, dropped: %s" % sums,
          {f: stats[f] for f in sums})
    for r in stats["rules"]:
        gs = chart_bins[r["name"]]
        sums = {f: sum(int(g[f]) for g in gs)
                for f in ("matched", "passed", "refused", "overruled", "answered")}
        check(all(sums[f] == r[f] for f in sums),
              "rule %s: its bins sum to STATS.json's %s" % (r["name"], sums),
              {f: r[f] for f in sums})

    # What passed and was refused per bin, against the GCRA computed here.
    want = expected_bins(packets, first_ns, width_ns, count)
    for name in LIMITS:
        got = [[int(g["passed"]), int(g["refused"])] for g in chart_bins[name]]
        diff = ["bin %d: report %s, expected %s" % (i, got[i], want[name][i])
                for i in range(min(len(got), count)) if got[i] != want[name][i]]
        check(not diff and len(got) == count,
              "rule %s: passed and refused per bin are the independent GCRA's (passed %s)"
              % (name, [p for p, _ in want[name]][:8] + ["..."]), "\n".join(diff[:10]))

    # The top refused sources: each with its guaranteed range, never the count alone.
    for r in stats["rules"]:
        rows = driver.find_elements(By.CSS_SELECTOR,
                                    "table.top[data-rule='%s'] tr.offender" % r["name"])
        shown = [row.find_element(By.CSS_SELECTOR, "td.range").text for row in rows]
        want_rows = ["at least {:,}, at most {:,}".format(t["count"] - t["error"], t["count"])
                     for t in r["top_refused"]]
        sources = [row.find_elements(By.TAG_NAME, "td")[1].text for row in rows]
        check(shown == want_rows and
              sources == [t["source"] for t in r["top_refused"]] and len(rows) > 0,
              "rule %s: top refused %s shown with the Space-Saving bound: %s"
              % (r["name"], sources, shown), "want %s" % want_rows)

    # The rules file, as text; its <script> did not run.
    pre = driver.find_element(By.CSS_SELECTOR, "pre.rules")
    injected = driver.execute_script("return typeof window.__fg_injected")
    check(pre.text.rstrip("\n") == RULES.rstrip("\n") and injected == "undefined",
          "the rules file is shown as written, its <script> as text, not run (window."
          "__fg_injected is %s)" % injected, pre.text[:200])
    check(not driver.find_elements(By.TAG_NAME, "script"), "the page has no script element")

    # Screenshot of the whole page at 1280 px, for people.
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1280, min(int(height) + 120, 8000))
    driver.save_screenshot(screenshot)

    logs = driver.get_log("browser")
    severe = [e for e in logs if e.get("level") == "SEVERE"]
    check(not severe, "the browser logged no error (%d entries in all)" % len(logs),
          json.dumps(severe, indent=1))


def main():
    reason = skip_reason()
    if reason:
        print("1..0 # SKIP " + reason)
        return 0
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    build = os.path.abspath(sys.argv[1])
    out_dir = os.path.join(build, "tests", "report")
    os.makedirs(out_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="fg-report-")
    try:
        packets = trace()
        rules_path = os.path.join(work, "rules.yaml")
        with open(rules_path, "w") as f:
            f.write(RULES)
        trace_path = os.path.join(work, CAPTURE_NAME)
        frames.write_pcap(trace_path, [p[3] for p in packets], [T0_US + p[0] for p in packets])
        first_ns = (T0_US + packets[0][0]) * 1000
        last_ns = (T0_US + packets[-1][0]) * 1000
        width_ns, count = expected_layout(first_ns, last_ns)

        stats_path = os.path.join(work, "stats.json")
        report_path = os.path.join(work, "report.html")
        base = ["--config", rules_path, "--in", trace_path, "--pass", os.path.join(work, "p.pcap"),
                "--quiet"]

        # Without --report: no report, and no new file anywhere (run from work itself, where a
        # default name would land).
        before = set(os.listdir(work))
        code, _, err = replay(build, base + ["--stats", stats_path], cwd=work)
        check(code == 0 and set(os.listdir(work)) - before <= {"stats.json", "p.pcap"} and
              not [n for n in os.listdir(work) if n.endswith(".html")],
              "replay without --report exits 0 and writes no report", err)
        # --report naming the --stats file: a usage error, nothing written.
        code, _, err = replay(build, base + ["--stats", stats_path, "--report", stats_path])
        check(code == 2 and "--report" in err and "--stats" in err,
              "--report naming the --stats file is refused with exit 2 (%s)" % err.strip(), err)

        code, _, err = replay(build, base + ["--stats", stats_path, "--report", report_path])
        if not check(code == 0 and os.path.exists(report_path),
                     "replay --stats --report exits 0 and writes the report", err):
            plan()
            return 1
        with open(stats_path) as f:
            stats = json.load(f)
        with open(report_path, encoding="utf-8") as f:
            html = f.read()
        shutil.copy(report_path, os.path.join(out_dir, "report.html"))
        check(stats["packets"] == len(packets), "STATS.json counts the %d frames" % len(packets),
              stats["packets"])

        # Self-contained: nothing fetched from anywhere.
        outside = re.findall(r"https?://|\bsrc\s*=|<link[^>]*href=\"(?!data:)|@import|url\(",
                             html, re.I)
        check(not outside, "the HTML refers to nothing outside itself (no http(s)://, src=, "
              "external link, @import or url())", outside)
        check("<script" not in html and "&lt;script&gt;window.__fg_injected" in html,
              "the HTML holds no <script>, the rules' one is escaped")

        offline_checks(build, work, base)

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1280,1000", "--user-data-dir=" + os.path.join(work, "chrome")):
            options.add_argument(arg)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            driver.set_page_load_timeout(30)
            driver.set_script_timeout(30)
            browser_checks(driver, "file://" + report_path, stats, packets,
                           first_ns, width_ns, count, os.path.join(out_dir, "report.png"))
        finally:
            driver.quit()
        print("# the report and a screenshot of it: %s/report.{html,png}" % out_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return plan()


if __name__ == "__main__":
    sys.exit(main())
