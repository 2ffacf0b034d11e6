#!/usr/bin/env python3
"""The man pages (man/) name everything an operator can type: every option of floodgate's and
floodctl's usage (--help, each floodgate command's --help, each floodctl command's usage error)
in floodgate(8) and floodctl(8), and every field the rules validator accepts in
floodgate-rules(5); and each page renders without a warning from groff or man, and lexgrog
reads its NAME. TAP output, one line a check.

  test_man_pages.py SRC FLOODGATE FLOODCTL [NAME=FILE]...
      NAME=FILE checks FILE in place of man/NAME (a page with an option taken out, to show
      the check fails)
"""
import os
import re
import subprocess
import sys
import tempfile

from tap import check, plan
from validator_fields import as_field, validator_fields

SRC, FLOODGATE, FLOODCTL = (os.path.abspath(a) for a in sys.argv[1:4])
PAGES = {name: os.path.join(SRC, "man", name)
         for name in ("floodgate.8", "floodctl.8", "floodgate-rules.5")}
for override in sys.argv[4:]:
    name, _, path = override.partition("=")
    PAGES[name] = os.path.abspath(path)

# An option as usage writes it: -x or --long-name, not the inside of a word (syn-auth, Ctrl-C).
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[a-zA-Z])(?![\w-])")
FLOODCTL_COMMAND = re.compile(r"^  ([a-z]+)\b", re.M)
# The arguments that make each floodctl command print its usage alone (exit 2).
USAGE_ARGS = {"xdp": []}


def run(argv, want_code):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    what = " ".join([os.path.basename(argv[0])] + argv[1:])
    check(p.returncode == want_code, "%s exits %d" % (what, want_code),
          "exit %d\n%s" % (p.returncode, p.stderr))
    # A usage error's first line repeats what was typed: only the usage after it counts.
    return p.stdout + p.stderr[p.stderr.find("usage:"):]


def rendered(path):
    """The page as text, one long unhyphenated line a paragraph, and groff's warnings."""
    p = subprocess.run(["groff", "-man", "-Tascii", "-P-cbou", "-ww", "-rLL=1000n", "-rHY=0",
                        path], capture_output=True, text=True, timeout=60)
    return p.stdout, p.stderr


def missing(text, wanted, form):
    return sorted(w for w in wanted if not re.search(form(w), text))


def floodgate_options():
    text = run([FLOODGATE, "--help"], 0)
    for command in ("run", "replay", "probe"):
        text += run([FLOODGATE, command, "--help"], 0)
    return set(OPTION.findall(text))


def floodctl_options():
    text = run([FLOODCTL, "--help"], 0)
    commands = sorted(set(FLOODCTL_COMMAND.findall(text)))
    check(len(commands) >= 10, "floodctl --help lists its commands", commands)
    for command in commands:
        usage = run([FLOODCTL, command] + USAGE_ARGS.get(command, ["--no-such-option"]), 2)
        check(("  " + command + " ") in usage, "floodctl %s prints its usage" % command, usage)
        text += usage
    return set(OPTION.findall(text))


def check_page(name, wanted, form, kind):
    text, warnings = rendered(PAGES[name])
    check(warnings == "", "%s renders without groff warnings" % name, warnings)
    man = subprocess.run(["man", "--warnings", "-l", PAGES[name]], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, MANWIDTH="80"))
    check(man.returncode == 0 and man.stderr == "", "man --warnings -l %s: nothing said" % name,
          man.stderr)
    lexgrog = subprocess.run(["lexgrog", PAGES[name]], capture_output=True, text=True, timeout=60)
    check(lexgrog.returncode == 0, "lexgrog reads %s's NAME" % name, lexgrog.stdout)
    absent = missing(text, wanted, form)
    check(not absent, "%s names all %d %s" % (name, len(wanted), kind),
          "missing: " + " ".join(absent))


def as_option(option):
    return r"(?<![\w-])" + re.escape(option) + r"(?![\w-])"


def fails_without_rtbh(options, work):
    """The check can fail: floodctl.8 without its --rtbh line is missing --rtbh alone."""
    cut = os.path.join(work, "floodctl-without-rtbh.8")
    with open(PAGES["floodctl.8"]) as f, open(cut, "w") as out:
        out.writelines(line for line in f if line.strip() != r".B \-\-rtbh")
    text, _ = rendered(cut)
    absent = missing(text, options, as_option)
    check(absent == ["--rtbh"], "floodctl.8 without its --rtbh line: --rtbh missing", absent)


def main():
    check_page("floodgate.8", floodgate_options(), as_option, "options of floodgate's usage")
    options = floodctl_options()
    check_page("floodctl.8", options, as_option, "options of floodctl's usage")
    with tempfile.TemporaryDirectory() as work:
        fails_without_rtbh(options, work)
    check_page("floodgate-rules.5", validator_fields(SRC, check), as_field,
               "fields of the validator")
    return plan()


if __name__ == "__main__":
    sys.exit(main())
