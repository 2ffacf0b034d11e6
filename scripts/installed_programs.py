#!/usr/bin/env python3
"""Every program the scripts, tests, labs and benchmarks start is installed by scripts/lib.sh.

A machine that already has a package hides a missing install step: a lab that runs `nft` passes
wherever nftables happens to be installed, and fails on a new Debian 12. This check lists the
programs the tree starts, finds each one's Debian package (dpkg's file lists) and refuses any that is
neither installed by FG_PACKAGES (the package or what it pulls in through Depends and
Pre-Depends, which `apt-get install --no-install-recommends` installs) nor part of Debian's
base (Priority required: what debootstrap's minbase and every container image hold; not
"important", which nftables and systemd are, and which a new machine may well lack). A program
that is not on the machine at all is refused too: nothing installs it.

Where a program is started:
  - shell (.sh, and .ci/run): the word in command position: at the start
    of a line or after ; && || | ( $( { ! and the keywords that begin a command, past any
    VAR=value, and through wrappers that run their argument (exec, nice -n N, timeout N,
    ip netns exec NS, env, setsid, taskset ..., and the scripts' own functions that run "$@");
    inside $(...) too. Here-documents are skipped, but for those fed to python3, which are
    read as Python.
  - Python (.py): the first item of a list literal given to subprocess.* or os.exec*, or
    assigned to a name that is (cmd = ["tshark", ...]); and in any other list literal or
    string, a first word that is a program on this machine.
  - anywhere: a program looked up by name (shutil.which with a NAME, command -v NAME).
  - meson.build: find_program('NAME').

  scripts/installed_programs.py [--verbose] [--without PACKAGE]
      exit 1 when a program is not installed; --without checks as if FG_PACKAGES lacked
      PACKAGE (the test that shows the check can fail)
"""
import ast
import os
import re
import shlex
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCANNED = ["scripts", "tests", "perf", "config", "bpf", "dpdk", ".ci"]
SKIPPED_DIRS = {"results", "__pycache__", "corpus"}

SHELL_KEYWORDS = {
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac",
    "in", "function", "select", "time", "!", "{", "}", "[[", "]]", "coproc",
}
# Words that begin a command and run the next word as another command.
WRAPPERS = {"exec", "command", "builtin", "nohup", "setsid", "stdbuf", "env", "nice", "timeout",
            "taskset", "chrt", "unshare", "xargs", "sudo", "fg_as_root", "then", "do", "else",
            "elif", "if", "while", "until", "!", "time"}
# fg_as_root runs sudo only where the scripts are not run as root, which the README's commands are.
ROOT_ONLY = {"fg_as_root", "sudo"}
SEPARATORS = {"\n", ";", "&&", "||", "|", "&", "(", "`", "|&", "{"}
COMMANDISH = re.compile(r"^(/usr)?(/s?bin/)?[a-z][a-z0-9_.+-]*$")
SUBPROCESS = {"run", "Popen", "call", "check_call", "check_output", "execv", "execvp", "execve",
              "execvpe", "spawnv", "spawnvp"}
BIN_DIRS = ("/usr/sbin/", "/usr/bin/", "/sbin/", "/bin/")
SYSTEM_PATH = ":".join(d.rstrip("/") for d in BIN_DIRS)
# A program looked up by name is one the tree means to start (a test that skips without it
# would hide the missing install step it exists to show).
LOOKED_UP = re.compile(r"(?:shutil\.which\(\s*[\"']|command -v\s+)([a-z][\w.+-]*)")
# Started only where the machine has them, and nothing is lost without them.
OPTIONAL = {
    "gdb": "tests/control/control_lib.py adds a hung process's backtraces to a failure's report",
}
PYTHON_HEREDOC = re.compile(r"\bpython3?\b[^<]*<<-?\s*['\"]?(\w+)['\"]?")


def shell_builtins():
    out = subprocess.run(["bash", "-c", "compgen -b; compgen -k"], capture_output=True, text=True)
    return set(out.stdout.split())


def sources():
    for top in SCANNED:
        for dirpath, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
            for name in names:
                path = os.path.join(dirpath, name)
                if name.endswith((".sh", ".py")) or name == "meson.build" or top == ".ci":
                    yield path
    yield os.path.join(ROOT, "meson.build")


def split_heredocs(text):
    """(shell text without here-document bodies, [python bodies])."""
    lines, shell, python = text.split("\n"), [], []
    i = 0
    while i < len(lines):
        line = lines[i]
        shell.append(line)
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line) if "<<<" not in line else None
        i += 1
        if m is None:
            continue
        end, body = m.group(1), []
        while i < len(lines) and lines[i].strip() != end:
            body.append(lines[i])
            i += 1
        i += 1  # the delimiter
        if PYTHON_HEREDOC.search(line):
            python.append("\n".join(body))
    return "\n".join(shell), python


def strip_comments(text):
    """The text without its comments, newlines kept (shlex's own comments swallow the newline
    that ends a command, and a comment's apostrophe would open a quote)."""
    out, quote, i = [], None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"':
                out.append(c)
                i += 1
                c = text[i] if i < len(text) else ""
        elif c == "\\":
            out.append(c)
            i += 1
            c = text[i] if i < len(text) else ""
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;(|&"):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def shell_tokens(text):
    text = strip_comments(text).replace("\\\n", " ")
    lex = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
    lex.whitespace = " \t\r"
    lex.commenters = ""
    lex.wordchars += "$@%:,+{}[]!^~=*?./-"
    tokens = []
    try:
        for tok in lex:
            tokens.append(tok)
    except ValueError:  # an unbalanced quote: what was read so far
        pass
    return tokens


def substitutions(text):
    """(text with each $(...) replaced by a word, [the texts inside]); arithmetic, $((...)) and
    ((...)), is replaced too and not read. Nesting and quotes inside a substitution are followed, which
    shlex alone does not: `"... $(python3 -c "...")"` is one word with a command inside."""
    out, inner, i = [], [], 0
    while i < len(text):
        arithmetic = text.startswith("$((", i) or text.startswith("((", i)  # also for ((...))
        if not text.startswith("$(", i) and not arithmetic:
            out.append(text[i])
            i += 1
            continue
        depth, j, quote = 0, i + (text[i] == "$"), None
        while j < len(text):
            c = text[j]
            if quote:
                if c == quote:
                    quote = None
                elif c == "\\" and quote == '"':
                    j += 1
            elif c in "'\"":
                quote = c
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if not arithmetic:
            inner.append(text[i + 2:j])
        out.append("SUBST")
        i = j + 1
    return "".join(out), inner


def shell_commands(text, functions, builtins, wrappers=frozenset()):
    """The words in command position of a shell text (here-documents already removed). A
    function in wrappers runs its arguments ("$@"), so the word after it is a command too; "$@"
    itself is reported where it is a command."""
    text, inner = substitutions(text)
    found = []
    for sub in inner:
        found += shell_commands(sub, functions, builtins, wrappers)
    tokens = shell_tokens(text)
    at_start, skip_args, i = True, 0, 0
    in_case_patterns = []  # per open case: True while its patterns (up to ")") are read
    while i < len(tokens):
        tok, i = tokens[i], i + 1
        if in_case_patterns and in_case_patterns[-1]:
            if tok == "esac":
                in_case_patterns.pop()
            elif tok == ")":
                in_case_patterns[-1], at_start = False, True
            continue
        if tok == ";;" and in_case_patterns:
            in_case_patterns[-1] = True
            continue
        if tok in SEPARATORS:
            at_start = True
            continue
        if not at_start:
            continue
        if tok == "case":  # case WORD in: the patterns follow
            while i < len(tokens) and tokens[i] != "in":
                i += 1
            i += 1
            in_case_patterns.append(True)
            continue
        if tok == "esac" and in_case_patterns:
            in_case_patterns.pop()
            continue
        if tok in ("for", "select"):  # for NAME in WORDS; do: the words are not commands
            at_start = False
            continue
        if skip_args:
            skip_args -= 1
            continue
        if tok.endswith("=") and i < len(tokens) and tokens[i] == "(":
            depth = 0  # VAR=( ... ): an array's items, not commands
            while i < len(tokens):
                depth += (tokens[i] == "(") - (tokens[i] == ")")
                i += 1
                if depth == 0:
                    break
            continue
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=", tok):
            continue  # VAR=value before a command
        if tok in ("local", "export", "readonly", "declare"):
            at_start = False
            continue
        if tok == "nice" and tokens[i:i + 1] == ["-n"]:
            found.append(tok)
            skip_args = 2
            continue
        if tok == "timeout":
            found.append(tok)
            while i + skip_args < len(tokens) and tokens[i + skip_args].startswith("-"):
                skip_args += 1
            skip_args += 1  # its options and the duration
            continue
        if tok == "ip" and tokens[i:i + 2] == ["netns", "exec"]:
            found.append(tok)
            skip_args = 3
            continue
        if tok in wrappers or tok == "$@":
            found.append(tok)
            at_start = tok in wrappers
            continue
        if tok in WRAPPERS or tok in SHELL_KEYWORDS:
            if tok not in SHELL_KEYWORDS and tok not in builtins and tok not in ROOT_ONLY:
                found.append(tok)
            continue
        at_start = False
        if tok in builtins or tok in functions or not COMMANDISH.match(tok):
            continue
        found.append(tok)
    return found


FUNCTION = re.compile(r"^[ \t]*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{(.*?\}[ \t]*(?:#[^\n]*)?$|.*?^[ \t]*\}$)",
                      re.M | re.S)


def shell_functions(texts, builtins):
    """(every function the scripts define, those among them that run their arguments)."""
    bodies = {}
    for text in texts:
        shell = split_heredocs(text)[0]
        for m in FUNCTION.finditer(shell):
            bodies.setdefault(m.group(1), []).append(m.group(2).rstrip().rstrip("}"))
    names = set(bodies)
    wrappers = {name for name, texts_of in bodies.items()
                if any("$@" in shell_commands(t, names, builtins) for t in texts_of)}
    return names, wrappers


def python_commands(text):
    """(commands for certain, first words that are commands only if this machine has them)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return [], []
    certain, maybe = [], []
    argv_names = set()

    def first_word(node):
        if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
            node = node.elts[0]
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
            return node.value.split()[0]
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
                node.func, "id", "")
            if name in SUBPROCESS and node.args:
                arg = node.args[0]
                if name.startswith(("exec", "spawn")) and len(node.args) > 1:
                    arg = node.args[-1] if isinstance(node.args[-1], ast.List) else node.args[0]
                word = first_word(arg)
                if isinstance(arg, (ast.List, ast.Tuple)) and word:
                    certain.append(word)
                elif isinstance(arg, ast.Name):
                    argv_names.add(arg.id)
        if isinstance(node, (ast.List, ast.Tuple)):
            word = first_word(node)
            if word:
                maybe.append(word)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and " " in node.value:
            word = first_word(node)
            if word:
                maybe.append(word)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple)):
            if any(isinstance(t, ast.Name) and t.id in argv_names for t in node.targets):
                word = first_word(node.value)
                if word:
                    certain.append(word)
    return certain, maybe


def meson_programs(text):
    return re.findall(r"find_program\(\s*'([^']+)'", text)


def dpkg_owners():
    """Every file an installed package owns -> that package (dpkg's own lists, read once)."""
    owners = {}
    info = "/var/lib/dpkg/info"
    for name in os.listdir(info):
        if name.endswith(".list"):
            package = name[:-len(".list")].split(":")[0]
            with open(os.path.join(info, name), encoding="utf-8", errors="replace") as f:
                for line in f:
                    owners.setdefault(line.rstrip("\n"), package)
    return owners


def package_of(program, owners):
    """(package or None, path or None). Looked up where a new Debian machine has its programs,
    not in /usr/local or a user's own PATH; /bin and /usr/bin are one folder (merged /usr), and
    a package may own either name."""
    path = program if program.startswith("/") else shutil.which(program, path=SYSTEM_PATH)
    if path is None:
        return None, None
    candidates = {path, os.path.realpath(path)}
    for p in list(candidates):
        for prefix in BIN_DIRS:
            if p.startswith(prefix):
                candidates.update(d + p[len(prefix):] for d in BIN_DIRS)
    for p in sorted(candidates):
        if p in owners:
            return owners[p], path
    return None, path


def fg_packages():
    script = f'source "{ROOT}/scripts/lib.sh"; printf "%s\\n" "${{FG_PACKAGES[@]}}"'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    return out.stdout.split()


def extra_packages(texts):
    """Folder -> the packages a script there installs beside FG_PACKAGES, or in its place, for
    its own folder (perf/run.sh installs the harness's matplotlib and valgrind;
    scripts/fresh_machine.sh debootstrap and git)."""
    extra = {}
    for path, text in texts.items():
        if os.path.relpath(path, ROOT) == "scripts/lib.sh":
            continue
        for m in re.finditer(r"FG_PACKAGES\+?=\(([^)]*)\)", text):
            folder = os.path.relpath(os.path.dirname(path), ROOT)
            extra.setdefault(folder, []).extend(m.group(1).split("#")[0].split())
    return extra


def installed_dependencies():
    """Installed package -> the installed packages its Depends and Pre-Depends name (of each
    group of alternatives, the first this machine has; a virtual package by its providers),
    read from dpkg alone: no apt lists needed."""
    out = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${Status}\t${Provides}\t"
                          "${Depends}, ${Pre-Depends}\n"], capture_output=True, text=True)
    rows, providers = {}, {}
    for line in out.stdout.splitlines():
        package, status, provides, depends = line.split("\t")
        if not status.endswith(" installed"):
            continue
        rows[package] = depends
        providers.setdefault(package, []).append(package)
        for virtual in provides.split(","):
            if virtual.strip():
                providers.setdefault(virtual.split()[0].split(":")[0], []).append(package)
    graph = {}
    for package, depends in rows.items():
        graph[package] = []
        for group in depends.split(","):
            names = [alt.split()[0].split(":")[0] for alt in group.split("|") if alt.strip()]
            have = next((providers[n] for n in names if n in providers), [])
            graph[package].extend(have[:1])
    return graph


def dependency_closure(packages, graph):
    """What installing PACKAGES brought: each and, through Depends and Pre-Depends, what they
    need (apt-get install --no-install-recommends installs no more)."""
    seen, todo = set(), list(packages)
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo.extend(graph.get(p, []))
    return seen


def priority(package):
    out = subprocess.run(["dpkg-query", "-W", "-f=${Priority}", package], capture_output=True,
                         text=True)
    return out.stdout.strip()


def programs_started(texts, builtins):
    """{program: (first file starting it, certain)}: certain where the program is surely
    started; otherwise a first word that counts only if this machine has such a program."""
    functions, wrappers = shell_functions(
        [t for p, t in texts.items() if not p.endswith(".py") and "meson.build" not in p], builtins)
    started = {}
    for path, text in texts.items():
        rel = os.path.relpath(path, ROOT)
        if path.endswith(".py"):
            sure, loose = python_commands(text)
        elif os.path.basename(path) == "meson.build":
            sure, loose = meson_programs(text), []
        else:
            shell, heredocs = split_heredocs(text)
            sure = [w for w in shell_commands(shell, functions, builtins, wrappers)
                    if w != "$@" and w not in wrappers]
            loose = []
            for body in heredocs:
                more_sure, more_loose = python_commands(body)
                sure += more_sure
                loose += more_loose
        for p in sure + LOOKED_UP.findall(text):
            if p not in OPTIONAL and (p not in started or not started[p][1]):
                started[p] = (rel, True)
        for p in loose:
            if COMMANDISH.match(p) and p not in builtins and p not in OPTIONAL:
                started.setdefault(p, (rel, False))
    return started


def main():
    verbose = "--verbose" in sys.argv
    without = sys.argv[sys.argv.index("--without") + 1] if "--without" in sys.argv else None
    builtins = shell_builtins()
    texts = {}
    for path in sources():
        try:
            with open(path, encoding="utf-8") as f:
                texts[path] = f.read()
        except (OSError, UnicodeDecodeError):
            continue
    started = programs_started(texts, builtins)
    installed = [p for p in fg_packages() if p != without]
    extra = extra_packages(texts)
    graph = installed_dependencies()
    allowed = {"": dependency_closure(installed, graph)}
    for folder, packages in extra.items():
        allowed[folder] = dependency_closure(installed + packages, graph)
    owners = dpkg_owners()
    problems, checked = [], 0
    for program, (where, certain) in sorted(started.items()):
        package, path = package_of(program, owners)
        folder = next((f for f in extra if where.startswith(f + "/")), "")
        if path is None and folder:
            # Its folder's script installs its own list when it runs (perf/run.sh valgrind,
            # fresh_machine.sh git): checked on a machine where that script has run.
            if verbose:
                print(f"{program} ({where}): not on this machine; {folder}'s own list")
            continue
        if path is None:
            if certain:
                problems.append(f"{program} ({where}): not on this machine, and nothing installs it")
            continue
        checked += 1
        if package is None:
            if certain:
                problems.append(f"{program} ({where}): {path} belongs to no Debian package")
            continue
        if package in allowed[folder] or priority(package) == "required":
            if verbose:
                how = ("FG_PACKAGES" if package in installed else
                       f"{folder}'s own list" if package in extra.get(folder, []) else
                       "a dependency" if package in allowed[folder] else priority(package))
                print(f"{program}: {package} ({how}; {where})")
            continue
        problems.append(f"{program} ({where}): package {package} is not installed by "
                        "scripts/lib.sh's FG_PACKAGES (nor pulled in, nor Debian's base)")
    for p in problems:
        print(p)
    print(f"installed programs: {checked} programs checked, {len(problems)} not installed by "
          "scripts/lib.sh")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
