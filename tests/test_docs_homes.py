#!/usr/bin/env python3
"""Nothing of the documentation is lost, and what points into it holds. TAP output, one line a
check, then "# N passed, N failed":

- every section of the README as it was before docs/ (tests/docs/readme_sections.txt, its
  headings frozen in their order, '#'s included) has a home: a heading of the same text in
  README.md or docs/*.md; a section without one is named;
- every relative link of README.md and docs/*.md names a file that exists, and where it has an
  #anchor, a heading of that file whose GitHub anchor it is;
- docs/rules.md names every field the rules validator accepts (tests/validator_fields.py, the
  man-pages test's reading of it), as a rules file writes it ("name:");
- the check can fail: the docs with one heading taken out leave that section alone homeless.

  test_docs_homes.py SRC
"""
import os
import re
import sys

from tap import check, plan
from validator_fields import as_field, validator_fields

SRC = os.path.abspath(sys.argv[1])
SECTIONS = os.path.join(SRC, "tests", "docs", "readme_sections.txt")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target), the target up to its first space (a title may follow).
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def outside_code(text):
    """The lines of a Markdown text outside its fenced code blocks, with their numbers."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        opening = re.match(r"^\s*(```|~~~)", line)
        if opening:
            if fence is None:
                fence = opening.group(1)
            elif line.strip().startswith(fence):
                fence = None
            continue
        if fence is None:
            yield number, line


def paragraphs(text):
    """The paragraphs outside code, each as one line (a link's text may wrap), with the number
    of its first line."""
    block, start, previous = [], None, None
    for number, line in outside_code(text):
        if block and (not line.strip() or number != previous + 1):
            yield start, " ".join(block)
            block = []
        if line.strip():
            start = number if not block else start
            block.append(line.strip())
        previous = number
    if block:
        yield start, " ".join(block)


def headings(text):
    return [m.group(2) for _, line in outside_code(text) for m in [HEADING.match(line)] if m]


def anchor(heading):
    """GitHub's anchor for a heading: its text as shown, lowercased, every character but
    letters, digits, '_', '-' and spaces dropped, spaces as '-'."""
    shown = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[^\w\- ]", "", shown.lower()).replace(" ", "-")


def anchors(text):
    """Every anchor of a file: a repeated one gets -1, -2, ... as GitHub numbers them."""
    seen, result = {}, set()
    for heading in headings(text):
        base = anchor(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        result.add(base if n == 0 else "%s-%d" % (base, n))
    return result


def doc_files(src):
    docs = os.path.join(src, "docs")
    names = sorted(n for n in os.listdir(docs) if n.endswith(".md"))
    return [os.path.join(src, "README.md")] + [os.path.join(docs, n) for n in names]


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def homeless(sections, texts):
    """The frozen sections whose heading text no file has, and where each of the others is."""
    homes = {}
    for path, text in texts.items():
        for heading in headings(text):
            homes.setdefault(heading, os.path.relpath(path, SRC))
    missing = [s for s in sections if HEADING.match(s).group(2) not in homes]
    return missing, homes


def check_homes(texts):
    sections = [line for line in read(SECTIONS).splitlines() if line.strip()]
    check(len(sections) >= 30, "the README's former sections read (%d)" % len(sections))
    missing, homes = homeless(sections, texts)
    check(not missing, "every one of the README's %d former sections has a home" % len(sections),
          "no home: " + "\n".join(missing))
    for section in sections:
        text = HEADING.match(section).group(2)
        print("#   %s: %s" % (text, homes.get(text, "NO HOME")))
    return sections


def fails_without_a_heading(sections, texts):
    """The check can fail: a file without one of the frozen headings leaves it alone homeless."""
    taken = sections[len(sections) // 2]
    text_of = HEADING.match(taken).group(2)
    path = next(p for p, t in texts.items() if text_of in headings(t))
    lines = texts[path].splitlines(keepends=True)
    number = next(n for n, line in outside_code(texts[path])
                  if HEADING.match(line) and HEADING.match(line).group(2) == text_of)
    cut = dict(texts, **{path: "".join(lines[:number - 1] + lines[number:])})
    before, _ = homeless(sections, texts)
    after, _ = homeless(sections, cut)
    lost = [s for s in after if s not in before]
    check(lost == [taken], "%s without the heading '%s': that section alone loses its home"
          % (os.path.relpath(path, SRC), text_of), lost)


def check_links(texts):
    own_anchors = {path: anchors(text) for path, text in texts.items()}
    bad, count = [], 0
    for path, text in texts.items():
        where = os.path.relpath(path, SRC)
        for number, paragraph in paragraphs(text):
            for target in LINK.findall(re.sub(r"`[^`]*`", "", paragraph)):
                if SCHEME.match(target):
                    continue
                count += 1
                file_part, _, fragment = target.partition("#")
                linked = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                    if file_part else path
                if not os.path.exists(linked):
                    bad.append("%s:%d: %s: no such file" % (where, number, target))
                    continue
                if not fragment:
                    continue
                if linked not in own_anchors:
                    own_anchors[linked] = anchors(read(linked)) if linked.endswith(".md") \
                        else set()
                if fragment not in own_anchors[linked]:
                    bad.append("%s:%d: %s: no heading with that anchor" % (where, number, target))
    check(count >= 20, "relative links found in README.md and docs/ (%d)" % count)
    check(not bad, "every relative link names a file, and a heading where it has an anchor",
          "\n".join(bad))


def check_fields():
    rules = os.path.join(SRC, "docs", "rules.md")
    text = "\n".join(line for _, line in outside_code(read(rules)))
    fields = validator_fields(SRC, check)
    absent = sorted(f for f in fields if not re.search(as_field(f), text))
    check(not absent, "docs/rules.md names all %d fields of the validator, outside its examples"
          % len(fields), "missing: " + " ".join(absent))


def main():
    texts = {path: read(path) for path in doc_files(SRC)}
    sections = check_homes(texts)
    fails_without_a_heading(sections, texts)
    check_links(texts)
    check_fields()
    return plan()


if __name__ == "__main__":
    sys.exit(main())
