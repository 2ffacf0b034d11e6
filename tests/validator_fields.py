"""Every field the rules validator accepts, read from its source: each DocReader::fields(map,
{"a", "b", ...}) call in rules/*.cpp, which refuses any other field of that map as "unknown
field (expected one of: ...)". The man-pages and docs tests check their pages name them all.
"""
import os
import re

FIELDS_CALL = re.compile(r"\bfields\(\s*[^,()]+,\s*\{([^}]*)\}\s*\)", re.S)


def validator_fields(src, check):
    """The accepted fields; check(ok, what, detail) is told of each file's lists read."""
    fields, calls = set(), 0
    for name in sorted(os.listdir(os.path.join(src, "rules"))):
        if not name.endswith(".cpp"):
            continue
        with open(os.path.join(src, "rules", name)) as f:
            source = f.read()
        lists = FIELDS_CALL.findall(source)
        # Every call of fields() read, or a list this pattern does not see would go unchecked.
        declared = len(re.findall(r"(?<![\w:])fields\(", source))
        if declared == 0:
            continue
        check(len(lists) == declared, "rules/%s: %d field lists read" % (name, declared),
              "read %d of %d fields(...) calls" % (len(lists), declared))
        calls += len(lists)
        for names in lists:
            fields.update(re.findall(r'"([a-z0-9_]+)"', names))
    check(calls >= 10, "the validator's field lists found (%d)" % calls)
    return fields


def as_field(field):
    """A field as a rules file writes it: "name:", not the inside of a longer word."""
    return r"(?<![\w-])" + re.escape(field) + ":"
