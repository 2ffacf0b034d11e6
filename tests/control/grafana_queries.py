#!/usr/bin/python3
"""The metric names a Grafana dashboard's PromQL queries refer to, checked against a scrape.

unknown_metrics(dashboard_path, metrics_text) returns (panel title, metric name) for every
metric name that some query of the dashboard refers to and the scrape does not export: the
queries are targets[].expr of every panel (those nested in collapsed rows too) and the query
template variables (label_values(...), query_result(...)).

Usage: grafana_queries.py DASHBOARD.json METRICS_FILE
  prints the unknown names and exits 1 if there are any, else how many queries and names it
  checked, exit 0.

The PromQL reading is lexical, which is enough for metric names: string literals, label
matchers {...}, ranges and subqueries [...] and Grafana's variables ($var, ${var},
$__rate_interval, [[var]]) are removed first; then every identifier is a metric name except
function names (an identifier followed by "("), the label lists of by/without/on/ignoring/
group_left/group_right, aggregation operators, the keywords (bool, offset, and, or, unless,
atan2), and numbers, durations and inf/nan. A selector {__name__="x"} names x.
"""
import glob
import json
import os
import re
import sys

# Keywords that take a parenthesised list of label names, which are no metric names.
LABEL_LIST_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
# Aggregation operators: not followed by "(" when written "sum by (x) (...)".
AGGREGATORS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
               "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
KEYWORDS = {"bool", "offset", "and", "or", "unless", "atan2", "inf", "nan"}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', re.S)
_VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+|\[\[[^\]]*\]\]")
_NAME_MATCHER = re.compile(r'__name__\s*=\s*"((?:[^"\\]|\\.)*)"')
_TOKEN = re.compile(
    r"(?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:[a-zA-Z]\w*)?)"
    r"|(?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)"
    r"|(?P<other>.)", re.S)


def _strip_brackets(expr, open_char, close_char):
    """expr with every (possibly nested) open_char...close_char group removed."""
    out, depth = [], 0
    for c in expr:
        if c == open_char:
            depth += 1
        elif c == close_char and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(c)
    return "".join(out)


def _split_top_level(args):
    """args split at the commas outside parentheses, braces, brackets and strings."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(args):
        c = args[i]
        if c in "\"'`":
            m = _STRING.match(args, i)
            i = m.end() if m else len(args)
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(args[start:i])
            start = i + 1
        i += 1
    parts.append(args[start:])
    return parts


def _grafana_query(expr):
    """The PromQL inside a Grafana Prometheus variable query, or the expr itself.

    label_values(label) and label_values(selector, label) name a metric only in the
    selector; label_names(), metrics(regex) name none; query_result(expr) holds an expr.
    """
    m = re.fullmatch(r"\s*(label_values|label_names|metrics|query_result)\s*\((.*)\)\s*", expr,
                     re.S)
    if not m:
        return expr
    func, args = m.group(1), m.group(2)
    if func == "query_result":
        return args
    if func == "label_values":
        parts = _split_top_level(args)
        return parts[0] if len(parts) >= 2 else ""
    if func == "label_names":
        return args  # label_names(selector) in recent Grafana: a selector or nothing
    return ""  # metrics(regex): a regex over names, not a name


def metric_names(expr):
    """The metric names a PromQL expression (or Grafana variable query) refers to, in order."""
    expr = _grafana_query(expr)
    names = [m.group(1) for m in _NAME_MATCHER.finditer(expr)
             if re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", m.group(1))]
    expr = _VARIABLE.sub(" 0 ", expr)  # after [[var]], so that those are not taken as ranges
    expr = _STRING.sub(' "" ', expr)
    expr = _strip_brackets(expr, "{", "}")
    expr = _strip_brackets(expr, "[", "]")
    expr = re.sub(r"#[^\n]*", " ", expr)  # PromQL comments
    tokens = [(m.lastgroup, m.group(m.lastgroup), m.end()) for m in _TOKEN.finditer(expr)]
    i = 0
    while i < len(tokens):
        kind, text, end = tokens[i]
        i += 1
        if kind != "ident":
            continue
        j = i
        while j < len(tokens) and tokens[j][1].isspace():
            j += 1
        followed_by_paren = j < len(tokens) and tokens[j][1] == "("
        lowered = text.lower()
        if lowered in LABEL_LIST_KEYWORDS:
            if followed_by_paren:  # skip the label list up to its ")"
                depth = 0
                while j < len(tokens):
                    depth += tokens[j][1] == "("
                    depth -= tokens[j][1] == ")"
                    j += 1
                    if depth == 0:
                        break
                i = j
            continue
        if followed_by_paren or lowered in AGGREGATORS or lowered in KEYWORDS:
            continue
        names.append(text)
    return names


def exported_names(metrics_text):
    """Every series name a scrape body exports: the samples' names, the names of the TYPE
    and HELP lines, and for histograms and summaries their _bucket/_sum/_count series."""
    from prometheus_client.parser import text_string_to_metric_families
    names = set()
    for family in text_string_to_metric_families(metrics_text):  # also checks the syntax
        names.update(s.name for s in family.samples)
        if family.type in ("histogram", "gaugehistogram", "summary"):
            names.update(family.name + s for s in ("", "_bucket", "_sum", "_count", "_created"))
        elif family.type != "counter":
            names.add(family.name)
    # The parser strips _total from a counter family's name; the TYPE line has the name as it
    # was written, which is what the series are called (a family may have no sample yet).
    for m in re.finditer(r"^#\s*(?:TYPE|HELP)\s+([a-zA-Z_:][a-zA-Z0-9_:]*)", metrics_text, re.M):
        names.add(m.group(1))
    return names


def written_metric_names(src):
    """The metric names control/metrics/*.cpp of the tree at src writes: each "floodgate_..."
    literal, and floodgate_[rule_]<counter>_total of the X-macro lists of dataplane/api/stats.h
    (a list may include another: FG_SYN_PROXY_COUNTERS(X) in FG_WORKER_COUNTERS)."""
    written = set()
    for path in glob.glob(os.path.join(src, "control", "metrics", "*.cpp")):
        with open(path) as f:
            written |= set(re.findall(r'"(floodgate_\w+)"', f.read()))
    with open(os.path.join(src, "dataplane", "api", "stats.h")) as f:
        stats = f.read()

    def macro(name):
        body = re.search(r"#define %s\(X\)(.*?)\n\n" % name, stats, re.S).group(1)
        names = []
        for inner, counter in re.findall(r"(FG_\w+)\(X\)|\bX\((\w+)\)", body):
            names += macro(inner) if inner else [counter]
        return names

    written |= {"floodgate_%s_total" % c for c in macro("FG_WORKER_COUNTERS")}
    written |= {"floodgate_rule_%s_total" % c for c in macro("FG_RULE_COUNTERS")}
    return written


def dashboard_queries(dashboard):
    """(panel title, expression) for every PromQL query of a dashboard (a parsed JSON)."""
    queries = []

    def walk(panels):
        for panel in panels or []:
            title = panel.get("title") or "panel %s" % panel.get("id")
            for target in panel.get("targets") or []:
                if isinstance(target, dict) and isinstance(target.get("expr"), str):
                    queries.append((title, target["expr"]))
            walk(panel.get("panels"))

    walk(dashboard.get("panels"))
    for var in (dashboard.get("templating") or {}).get("list") or []:
        if var.get("type") != "query":
            continue
        query = var.get("query")
        if isinstance(query, dict):
            query = query.get("query")
        if isinstance(query, str) and query.strip():
            queries.append(("variable $%s" % var.get("name"), query))
        definition = var.get("definition")
        if isinstance(definition, str) and definition.strip() and definition != query:
            queries.append(("variable $%s" % var.get("name"), definition))
    return queries


def check(dashboard_path, metrics_text):
    """(queries, names referred to, unknown (title, name) pairs without repeats)."""
    with open(dashboard_path) as f:
        dashboard = json.load(f)
    exported = exported_names(metrics_text)
    queries = dashboard_queries(dashboard)
    referred, unknown = set(), []
    for title, expr in queries:
        for name in metric_names(expr):
            referred.add(name)
            if name not in exported and (title, name) not in unknown:
                unknown.append((title, name))
    return queries, referred, unknown


def unknown_metrics(dashboard_path, metrics_text):
    """[(panel title, metric name)] of the names the dashboard's queries refer to that
    metrics_text (a Prometheus text exposition) does not export."""
    return check(dashboard_path, metrics_text)[2]


def main(argv):
    if len(argv) != 3:
        print("usage: grafana_queries.py DASHBOARD.json METRICS_FILE", file=sys.stderr)
        return 2
    with open(argv[2]) as f:
        text = f.read()
    queries, referred, unknown = check(argv[1], text)
    for title, name in unknown:
        print("%s: %s is not exported" % (title, name))
    if unknown:
        return 1
    print("%d queries, %d metric names, all exported" % (len(queries), len(referred)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
