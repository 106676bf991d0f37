#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that README.md and docs/*.md name only things that exist.

In the documents' code (fenced blocks and `inline code`) it finds
  - make targets: `make X`, `make -C DIR X` (X a rule of the top-level Makefile or of DIR/Makefile),
  - CMake targets: `cmake --build build --target X` and the tools `velo-*` (add_executable,
    add_library or add_custom_target of a CMakeLists.txt or *.cmake file of the tree), and the
    long options given to a tool (`velo-flash --dry-run`: "--dry-run" or "dry-run" in a source),
  - tests: test benches `tb_*` (ctest tests of that name) and dotted names whose first part is that of a ctest test (`rtl.lint`, `fabric.*`), which
    must match a test of `ctest -N` in the build directory or, for the figures of `make bench`
    (`hw.e2e_latency_cycles`), stand in a file of the tree; the regexes of `ctest -R`, which must
    select a test,
  - repository paths: words that start with a top-level folder of the tree (`rtl/net/velo_link.v`,
    `sim/model/host.{hpp,cpp}`, `rtl/board/xc7/lint/*.sv`), which git must track; under build/
    only the outputs listed in BUILD_OUTPUTS,
  - documents: markdown links (the file, and the heading of an #anchor) and names `*.md` in the text.
Prints one line per wrong name and exits 1 if there is any.

  check_docs.py --build BUILD_DIR     the documents of this tree
  check_docs.py --selftest            a document with one wrong name of each kind must fail
"""
import argparse
import fnmatch
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# build/ outputs a document may name, with the target that makes them
BUILD_OUTPUTS = {
    "build/bench/": "make bench",
    "build/demo/": "make demo",
    "build/fpga/": "make -C fpga ice40 / report, make bitstream",
    "build/synth/": "make synth-report",
    "build/sim/": "cmake --build build (benches and velo-demo)",
    "build/sw/": "cmake --build build (libraries, BTL component)",
    "build/driver-linux/": "make -C sw/driver/linux",
}

FENCE = re.compile(r"^\s*```")
INLINE = re.compile(r"`([^`\n]+)`")


def code_spans(text):
    """The code of a markdown text: lines of fenced blocks and inline code spans."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            out.append(line)
        else:
            out.extend(INLINE.findall(line))
    return out


RULE = re.compile(r"^([^\s:#=$()][^:=#]*?)\s*::?(?!=)")


def make_rules(path):
    rules = set()
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        for line in f:
            m = RULE.match(line)
            if m:
                rules.update(m.group(1).split())
    return rules


CMAKE_DEF = re.compile(r"\badd_(?:executable|library|custom_target)\(\s*([\w.${}-]+)")


class Tree:
    """What exists: tracked files, make rules, CMake targets, tests."""

    def __init__(self, root, tests):
        self.root = root
        files = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True,
                               text=True).stdout.split()
        self.files = set(files)
        self.dirs = {os.path.dirname(f) for f in files}
        for d in list(self.dirs):
            while d:
                d = os.path.dirname(d)
                self.dirs.add(d)
        self.tops = {p.split("/")[0] for p in files if "/" in p} | {"build"}
        self.cmake = set()
        for f in files:
            if os.path.basename(f) == "CMakeLists.txt" or f.endswith(".cmake"):
                with open(os.path.join(root, f)) as fh:
                    for name in CMAKE_DEF.findall(fh.read()):
                        self.cmake.add(re.sub(r"\$\{[^}]*\}", "", name))
        self.tests = tests
        self.prefixes = {t.split(".")[0] for t in tests if "." in t}
        self.sources = {}

    def source_has(self, word):
        """Does a tracked file outside the documents contain word (a figure of make bench)?"""
        if not self.sources:
            for f in self.files:
                if f.endswith(".md"):
                    continue
                try:
                    with open(os.path.join(self.root, f), errors="replace") as fh:
                        self.sources[f] = fh.read()
                except OSError:
                    pass
        return any(word in s for s in self.sources.values())

    def path_exists(self, p):
        p = p.rstrip("/")
        if any(c in p for c in "*?["):
            return any(fnmatch.fnmatch(f, p) or fnmatch.fnmatch(f, p + "/*") for f in self.files)
        return p in self.files or p in self.dirs


def expand_braces(word):
    m = re.search(r"\{([^{}]*,[^{}]*)\}", word)
    if not m:
        return [word]
    return [w for alt in m.group(1).split(",")
            for w in expand_braces(word[:m.start()] + alt + word[m.end():])]


def check_make(tree, args, where, errors):
    words = args.split()
    rules_file, i, targets = "Makefile", 0, []
    while i < len(words):
        w = words[i]
        if w == "-C" and i + 1 < len(words):
            rules_file = os.path.join(words[i + 1], "Makefile")
            i += 2
            continue
        if w.startswith("-") or "=" in w or "$" in w or "<" in w:
            i += 1
            continue
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", w):
            break
        targets.append(w)
        i += 1
    if not targets:
        return
    rules = make_rules(os.path.join(tree.root, rules_file))
    if rules is None:
        errors.append(f"{where}: `make{args}`: no {rules_file}")
        return
    for t in targets:
        if t not in rules:
            errors.append(f"{where}: `make{args}`: {rules_file} has no target '{t}'")


MAKE = re.compile(r"(?<![\w./-])make((?:[ \t]+[^\s#;&|)`'\"]+)*)")


def check_make_command(tree, m, where, errors):
    if not re.match(r"\s+(sure|it|the|a|an)\b", m.group(1)):  # else prose in a comment
        check_make(tree, m.group(1), where, errors)


CMAKE_TARGET = re.compile(r"cmake --build \S+((?: +--?[\w-]+(?: +[^-\s]\S*)?)*)")


def check_cmake_targets(tree, m, where, errors):
    t = re.search(r"--target((?: +[^-\s]\S*)+)", m.group(1))
    for name in (t.group(1).split() if t else []):
        if name not in tree.cmake:
            errors.append(f"{where}: '{name}' is not a target of the build")


BINARY = re.compile(r"(?<![\w./<$-])(velo-[a-z0-9]+(?:-[a-z0-9]+)*)(?![\w./<>-])")


def check_binary(tree, m, where, errors):
    if m.group(1) not in tree.cmake:
        errors.append(f"{where}: '{m.group(1)}' is not a target of the build")


BINARY_ARGS = re.compile(r"(?<![\w./<$-])(velo-[a-z0-9-]+)((?:[ \t]+(?!--(?:\s|$))[^\s#;&|`]+)*)")


def check_options(tree, m, where, errors):
    # an option after another option may be that option's value (--mpi-arg --mca)
    prev = ""
    for word in m.group(2).split():
        if word.startswith("--") and len(word) > 2 and not prev.startswith("-"):
            opt = word.split("=")[0]
            if not tree.source_has('"' + opt) and not tree.source_has('"' + opt[2:] + '"'):
                errors.append(f"{where}: {m.group(1)}: option '{opt}' is in no source of the tree")
        prev = word


BENCH_BIN = re.compile(r"(?<![\w.-])(tb_[a-z0-9_]+)(?![\w./-])")


def check_bench(tree, m, where, errors):
    tb = m.group(1)
    if tb not in tree.cmake and not any(t == tb or t.startswith(tb + ".") for t in tree.tests):
        errors.append(f"{where}: test bench '{tb}' is no ctest test")


CTEST_R = re.compile(r"ctest\b[^\n]*?-R +('[^']+'|\"[^\"]+\"|\S+)")


def check_ctest_regex(tree, m, where, errors):
    rx = m.group(1).strip("'\"")
    try:
        if not any(re.search(rx, t) for t in tree.tests):
            errors.append(f"{where}: `ctest -R {rx}` selects no test")
    except re.error:
        errors.append(f"{where}: `ctest -R {rx}`: not a regular expression")


DOTTED = re.compile(r"(?<![\w./$-])([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_*-]+)+)")


def check_test_name(tree, m, where, errors):
    name = m.group(1).rstrip(".")
    if name.split(".")[0] not in tree.prefixes or "/" in m.string[m.end():m.end() + 1]:
        return
    pat = name + "*" if name.endswith("_") else name
    if any(fnmatch.fnmatchcase(t, pat) for t in tree.tests):
        return
    if "*" not in name and tree.source_has(name):
        return  # a figure of make bench
    errors.append(f"{where}: '{name}' is no ctest test (nor a name in the sources)")


# the names in a document's code, in the order they are checked: what finds them, what checks one
CODE_NAMES = (
    (MAKE, check_make_command),
    (CMAKE_TARGET, check_cmake_targets),
    (BINARY, check_binary),
    (BINARY_ARGS, check_options),
    (BENCH_BIN, check_bench),
    (CTEST_R, check_ctest_regex),
    (DOTTED, check_test_name),
)


def check_code(tree, code, where, errors):
    for pattern, check in CODE_NAMES:
        for m in pattern.finditer(code):
            check(tree, m, where, errors)
    # words, a comma inside braces (host.{hpp,cpp}) kept
    code = re.sub(r"\{[^{}\s]*\}", lambda b: b.group(0).replace(",", "\0"), code)
    for word in re.split(r"[\s`'\"(),;=<>|]+", code):
        word = word.replace("\0", ",")
        word = word.strip(".:")
        if word.startswith("./"):
            word = word[2:]
        if "/" not in word or word.split("/")[0] not in tree.tops or re.search(r"[<$]|\.\.\.", word):
            continue
        if word.startswith("build/"):
            if not any(word.startswith(b) or word + "/" == b for b in BUILD_OUTPUTS):
                errors.append(f"{where}: build output '{word}' is not one of the known outputs "
                              f"({', '.join(sorted(BUILD_OUTPUTS))})")
            continue
        for p in expand_braces(word):
            if not tree.path_exists(p):
                errors.append(f"{where}: '{p}' does not exist in the repository")


def anchors(text):
    """GitHub's anchors of a markdown text's headings."""
    out = set()
    for h in re.findall(r"^#+\s+(.*)$", text, re.M):
        out.add(re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-"))
    return out


LINK = re.compile(r"\]\(([^)\s]+)\)")
MD_NAME = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.md)\b")


def check_links(tree, doc, text, errors):
    """Markdown links to files of the tree (and their headings), other documents named in prose."""
    here = os.path.dirname(doc)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        rel = os.path.normpath(os.path.join(here, path)) if path else doc
        if path and not tree.path_exists(rel):
            errors.append(f"{doc}: link to '{path}': no such file")
        elif anchor and rel.endswith(".md"):
            with open(os.path.join(tree.root, rel)) as f:
                if anchor not in anchors(f.read()):
                    errors.append(f"{doc}: link to '{target}': no such heading")
    for name in MD_NAME.findall(LINK.sub("]()", text)):
        if name.startswith("build/"):
            continue
        if not any(f == name or f.endswith("/" + name) for f in tree.files):
            errors.append(f"{doc}: names '{name}', which is not in the tree")


def check_docs(tree, docs):
    errors = []
    for doc in docs:
        with open(os.path.join(tree.root, doc)) as f:
            text = f.read()
        for code in code_spans(text):
            check_code(tree, code, doc, errors)
        check_links(tree, doc, text, errors)
    return list(dict.fromkeys(errors))


def ctest_names(build):
    out = subprocess.run(["ctest", "--test-dir", build, "-N"], check=True, capture_output=True,
                         text=True).stdout
    return re.findall(r"^\s*Test\s+#\d+: (\S+)", out, re.M)


def documents(root):
    files = subprocess.run(["git", "-C", root, "ls-files", "README.md", "docs"], check=True,
                           capture_output=True, text=True).stdout.split()
    return [f for f in files if f.endswith(".md")]


def selftest():
    """A document with one wrong name of each kind fails on each, its right twin passes."""
    tests = ["rtl.lint", "tools.velo_info.parsers", "fabric.pingpong", "tb_link"]
    good = ("```\nmake test\nmake -C fpga ice40\nctest -R 'tools|rtl' --test-dir build\n"
            "cmake --build build --target velo-info\nvelo-flash --board ac701 --any X -- ./app --other\n```\n"
            "`rtl.lint`, `tools.velo_info.*`, `rtl/net/velo_link.v`, `sim/model/host.{hpp,cpp}`, "
            "`build/bench/results.txt`, `velo-flash`, `hw.e2e_latency_cycles`, `tb_link --gtest_filter=X`\n"
            "## A heading, with punctuation\nsee [it](#a-heading-with-punctuation), [good.md](good.md), "
            "[the code](../rtl/net/velo_link.v)\n")
    bad = {
        "make target": "```\nmake no-such-target\n```\n",
        "fpga make target": "`make -C fpga no_such_board`\n",
        "cmake target": "`cmake --build build --target velo-nosuch`\n",
        "binary": "run `velo-nosuch` on each node\n",
        "option": "`velo-flash --board ac701 --no-such-option`\n",
        "ctest test": "`rtl.no_such_test`\n",
        "ctest glob": "`fabric.nosuch*`\n",
        "ctest regex": "`ctest -R '^nosuch'`\n",
        "test bench": "```\nSEED=1 build/sim/tb_nosuch\n```\n",
        "path": "`rtl/net/velo_nosuch.v`\n",
        "path in braces": "`sim/model/host.{hpp,cc}`\n",
        "build output": "`build/nowhere/x.bin`\n",
        "link": "see [the guide](nosuch.md)\n",
        "link anchor": "see [the guide](good.md#no-such-heading)\n",
        "document": "as NOSUCH.md says\n",
    }
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["git", "init", "-q", tmp], check=True)
        with open(os.path.join(ROOT, "Makefile")) as f:
            makefile = f.read()
        os.makedirs(os.path.join(tmp, "fpga"))
        with open(os.path.join(ROOT, "fpga", "Makefile")) as f:
            fpga_makefile = f.read()
        files = {"Makefile": makefile, "fpga/Makefile": fpga_makefile,
                 "CMakeLists.txt": "add_executable(velo-info${v} x.cpp)\nadd_executable(velo-flash x.cpp)\n",
                 "x.cpp": 'opt("--board"); opt("any");\n',
                 "rtl/net/velo_link.v": "", "sim/model/host.hpp": "", "sim/model/host.cpp": "",
                 "sim/bench/bench.cpp": 'puts("hw.e2e_latency_cycles");\n', "docs/good.md": good}
        for kind, text in bad.items():
            files[f"docs/bad_{kind.replace(' ', '_')}.md"] = text
        for name, text in files.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        subprocess.run(["git", "-C", tmp, "add", "."], check=True)
        tree = Tree(tmp, tests)
        failed = 0
        errors = check_docs(tree, ["docs/good.md"])
        if errors:
            print("selftest: the right document fails:\n  " + "\n  ".join(errors))
            failed += 1
        for kind in bad:
            doc = f"docs/bad_{kind.replace(' ', '_')}.md"
            errors = check_docs(tree, [doc])
            if len(errors) != 1:
                print(f"selftest: a wrong {kind} gives {len(errors)} errors, not 1: {errors}")
                failed += 1
    print(f"selftest: {len(bad)} wrong names, {failed} check(s) failed")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="the build directory (for its ctest tests)")
    ap.add_argument("--selftest", action="store_true")
    a = ap.parse_args()
    if a.selftest:
        return selftest()
    if not a.build:
        ap.error("--build BUILD_DIR is needed")
    tree = Tree(ROOT, ctest_names(a.build))
    docs = documents(ROOT)
    errors = check_docs(tree, docs)
    for e in errors:
        print(e)
    print(f"check_docs: {len(docs)} documents, {len(errors)} wrong name(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
