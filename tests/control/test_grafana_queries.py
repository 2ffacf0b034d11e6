#!/usr/bin/python3
"""Self-test of grafana_queries.py (the PromQL metric-name reading and the check against a
scrape), and of config/grafana/*.json's structure: it parses, every panel has a unique id and
a gridPos inside the 24 columns, no two panels overlap, every query has a refId and the
Prometheus datasource variable. The live check of the dashboard against a real /metrics body is
made by tests/control/test_control.py, which runs the dataplane. Plain unittest."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import grafana_queries  # noqa: E402
from grafana_queries import metric_names, unknown_metrics  # noqa: E402

DASHBOARDS = [os.path.join(SRC, "config", "grafana", n)
              for n in ("floodgate.json", "floodgate-xdp.json", "floodgate-cluster.json",
                        "floodgate-nic.json")]

METRICS = """\
# HELP floodgate_x_total An x.
# TYPE floodgate_x_total counter
floodgate_x_total{rule="dns"} 3
# HELP floodgate_y A y.
# TYPE floodgate_y gauge
floodgate_y{rule="dns"} 1
# HELP floodgate_empty_total A counter without samples yet.
# TYPE floodgate_empty_total counter
# HELP floodgate_lat_seconds A histogram.
# TYPE floodgate_lat_seconds histogram
floodgate_lat_seconds_bucket{le="+Inf"} 1
floodgate_lat_seconds_sum 0.5
floodgate_lat_seconds_count 1
"""


def dashboard(panels, variables=()):
    return {"title": "t", "schemaVersion": 39, "panels": panels,
            "templating": {"list": list(variables)}}


def panel(title, *exprs, **extra):
    p = {"type": "timeseries", "title": title,
         "targets": [{"refId": chr(65 + i), "expr": e} for i, e in enumerate(exprs)]}
    p.update(extra)
    return p


class MetricNames(unittest.TestCase):
    def names(self, expr):
        return metric_names(expr)

    def test_selector_range_and_variables(self):
        self.assertEqual(self.names(
            'sum by (rule) (rate(floodgate_x_total{rule=~"$rule"}[$__rate_interval]))'),
            ["floodgate_x_total"])

    def test_topk_and_numbers(self):
        self.assertEqual(self.names('topk(5, sum by (rule, source) (floodgate_y{job="a"}))'),
                         ["floodgate_y"])
        self.assertEqual(self.names("rate(a_total[5m]) * 8 + 1e3 - 0x1f + 1.5 > bool 2"),
                         ["a_total"])

    def test_binary_modifiers(self):
        self.assertEqual(self.names("a / ignoring(core) b"), ["a", "b"])
        self.assertEqual(self.names("a * on(core, job) group_left(role) b unless c"),
                         ["a", "b", "c"])
        self.assertEqual(self.names("a * on(core) group_left b"), ["a", "b"])

    def test_aggregation_modifier_after(self):
        self.assertEqual(self.names("sum(rate(a_total[1m])) without (core, instance)"),
                         ["a_total"])

    def test_offset_subquery_and_at(self):
        self.assertEqual(self.names("max_over_time(rate(a_total[5m])[1h:1m] offset 1d)"),
                         ["a_total"])
        self.assertEqual(self.names("a @ end()"), ["a"])

    def test_strings_are_no_names(self):
        self.assertEqual(self.names(
            'label_replace(a, "dst", "x", "src", "(.*)") or count_values("value", b)'),
            ["a", "b"])

    def test_grafana_variable_queries(self):
        self.assertEqual(self.names("label_values(floodgate_y, rule)"), ["floodgate_y"])
        self.assertEqual(self.names('label_values(floodgate_y{job=~"$job"}, rule)'),
                         ["floodgate_y"])
        self.assertEqual(self.names("label_values(job)"), [])
        self.assertEqual(self.names("metrics(floodgate_.*)"), [])
        self.assertEqual(self.names("query_result(topk(3, floodgate_y))"), ["floodgate_y"])

    def test_other_variable_spellings(self):
        self.assertEqual(self.names("topk(${n:raw}, a) / [[b]] + $c"), ["a"])

    def test_name_matcher(self):
        self.assertEqual(self.names('{__name__="a_total", rule="x"}'), ["a_total"])

    def test_colons_and_case(self):
        self.assertEqual(self.names("job:a:rate5m / SUM BY (x) (b)"), ["job:a:rate5m", "b"])


class UnknownMetrics(unittest.TestCase):
    def run_check(self, dash):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(dash, f)
        self.addCleanup(os.unlink, f.name)
        return unknown_metrics(f.name, METRICS), f.name

    def test_exactly_the_unknown_ones(self):
        dash = dashboard([
            panel("rates", 'sum by (rule) (rate(floodgate_x_total{rule=~"$rule"}[$__rate_interval]))',
                  'topk(5, floodgate_y) / ignoring(core) floodgate_nope'),
            {"type": "row", "title": "collapsed", "collapsed": True, "panels": [
                panel("inner", "increase(floodgate_empty_total[1h])",
                      "histogram_quantile(0.9, rate(floodgate_lat_seconds_bucket[5m]))",
                      "floodgate_lat_seconds_count + floodgate_lat_seconds_sum"),
                panel("inner bad", "floodgate_x", "rate(floodgate_missing_total[5m])"),
            ]},
            panel("no targets"),
        ], [
            {"type": "datasource", "name": "datasource", "query": "prometheus"},
            {"type": "query", "name": "rule", "query": {"query": "label_values(floodgate_y, rule)",
                                                        "refId": "V"}},
            {"type": "query", "name": "gone", "query": "label_values(floodgate_gone, rule)"},
        ])
        unknown, path = self.run_check(dash)
        # floodgate_x: a counter family's name without _total is no series.
        self.assertEqual(unknown, [("rates", "floodgate_nope"), ("inner bad", "floodgate_x"),
                                   ("inner bad", "floodgate_missing_total"),
                                   ("variable $gone", "floodgate_gone")])
        metrics = path + ".prom"
        with open(metrics, "w") as f:
            f.write(METRICS)
        self.addCleanup(os.unlink, metrics)
        cli = [sys.executable, os.path.join(HERE, "grafana_queries.py"), path, metrics]
        r = subprocess.run(cli, capture_output=True, text=True)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("inner bad: floodgate_missing_total is not exported", r.stdout)

    def test_all_known(self):
        dash = dashboard([panel("ok", "floodgate_y + on(rule) floodgate_x_total")])
        unknown, path = self.run_check(dash)
        self.assertEqual(unknown, [])
        with tempfile.NamedTemporaryFile("w", suffix=".prom", delete=False) as f:
            f.write(METRICS)
        self.addCleanup(os.unlink, f.name)
        r = subprocess.run([sys.executable, os.path.join(HERE, "grafana_queries.py"), path,
                            f.name], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout.strip()),
                         (0, "1 queries, 2 metric names, all exported"), r.stderr)


def all_panels(panels):
    for p in panels:
        yield p
        yield from all_panels(p.get("panels") or [])


def overlaps(a, b):
    return (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and
            a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])


class Dashboards(unittest.TestCase):
    def check_layout(self, panels, where):
        for i, a in enumerate(panels):
            g = a["gridPos"]
            self.assertTrue(g["x"] >= 0 and g["y"] >= 0 and g["w"] >= 1 and g["h"] >= 1 and
                            g["x"] + g["w"] <= 24, "%s: %s %s" % (where, a["title"], g))
            for b in panels[i + 1:]:
                self.assertFalse(overlaps(g, b["gridPos"]), "%s: %r overlaps %r" %
                                 (where, a["title"], b["title"]))

    def test_structure(self):
        for path in DASHBOARDS:
            with self.subTest(dashboard=os.path.basename(path)):
                with open(path) as f:
                    dash = json.load(f)
                self.assertGreaterEqual(dash["schemaVersion"], 36)
                self.assertIsNone(dash.get("id"))
                self.assertTrue(dash.get("uid"))
                panels = list(all_panels(dash["panels"]))
                ids = [p["id"] for p in panels]
                self.assertEqual(len(ids), len(set(ids)), "unique panel ids")
                for p in panels:
                    self.assertIn("gridPos", p, p.get("title"))
                    self.assertTrue(p.get("title"), p["id"])
                    refids = [t["refId"] for t in p.get("targets", [])]
                    self.assertEqual(len(refids), len(set(refids)), p["title"])
                    if p["type"] != "row":
                        self.assertEqual(p["datasource"],
                                         {"type": "prometheus", "uid": "${datasource}"}, p["title"])
                        self.assertTrue(p["targets"], p["title"])
                self.check_layout(dash["panels"], "top level")
                for row in dash["panels"]:
                    if row.get("collapsed"):
                        self.check_layout(row["panels"], row["title"])
                variables = {v["name"]: v for v in dash["templating"]["list"]}
                self.assertEqual(variables["datasource"]["type"], "datasource")
                self.assertEqual(variables["datasource"]["query"], "prometheus")
                queries = grafana_queries.dashboard_queries(dash)
                self.assertTrue(queries)
                for title, expr in queries:
                    self.assertTrue(metric_names(expr), "%s: %s names no metric" % (title, expr))

    def test_names_are_in_metrics_cpp(self):
        """Every name the dashboards use is written by control/metrics/: a literal there, or
        floodgate_[rule_]<counter>_total of the X-macro lists of dataplane/api/stats.h.
        (The XDP families are only written when the dataplane runs the XDP tier, so no scrape
        of the control test has them: this is their check.)"""
        written = grafana_queries.written_metric_names(SRC)
        self.assertIn("floodgate_rule_matched_total", written)
        self.assertIn("floodgate_xdp_frames_total", written)
        for path in DASHBOARDS:
            with open(path) as f:
                dash = json.load(f)
            used = {n for _, e in grafana_queries.dashboard_queries(dash) for n in metric_names(e)}
            self.assertEqual(sorted(used - written), [], os.path.basename(path))


if __name__ == "__main__":
    unittest.main(verbosity=2)
