"""docs/sightline.1 (made by `make man` from the command's own definitions) against the binary:
every subcommand and every flag and argument `sightline <sub> --help-hidden` shows must be in
the page, under that subcommand, so the committed page cannot drift from the command."""

import re
import shutil
import subprocess

import pytest

from conftest import REPO, server_binary

PAGE = REPO / "docs" / "sightline.1"
OPTION = re.compile(r"^  (-\w, )?(--[\w-]+)")
ARGUMENT = re.compile(r"^  <([\w-]+)>")
SUBCOMMAND = re.compile(r"^  ([a-z][\w-]*)( \(default\))?\s")


def help_hidden(*path: str) -> str:
    run = subprocess.run([str(server_binary()), *path, "--help-hidden"], capture_output=True, text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    return run.stdout


def sections(text: str) -> dict[str, str]:
    """The text under each `SECTION:` heading of a help screen."""
    found, name = {}, None
    for line in text.splitlines():
        if re.fullmatch(r"[A-Z][A-Z ]+:", line):
            name = line[:-1]
            found[name] = ""
        elif name:
            found[name] += line + "\n"
    return found


def commands(path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """Every command path with its --help-hidden text, the root first."""
    text = help_hidden(*path)
    found = [(path, text)]
    for line in sections(text).get("SUBCOMMANDS", "").splitlines():
        match = SUBCOMMAND.match(line)
        if match:
            found += commands(path + (match.group(1),))
    return found


def page_entry(page: str, name: str) -> str:
    """The page's text for one subcommand: from its `.It Em NAME` to the next subcommand's."""
    match = re.search(rf"^\.It Em {re.escape(name)}\n(.*?)(?=^\.It Em |^\.Sh )", page, re.S | re.M)
    assert match, f"docs/sightline.1 has no entry for the subcommand {name!r}; run `make man`"
    return match.group(1)


def test_man_page_has_every_subcommand_and_flag():
    assert PAGE.is_file(), "docs/sightline.1 is missing; run `make man`"
    page = PAGE.read_text()
    every = commands()
    assert {p for p, _ in every} >= {("serve",), ("detect",), ("bench",), ("token",), ("token", "add")}, every
    missing = []
    for path, text in every:
        entry = page_entry(page, path[-1]) if path else page.split(".It Em ", 1)[0]
        entry = re.sub(r"Fl (\w+) , -", r"Fl \1\nFl -", entry)   # `-h, --help` is `.It Fl h , -help`
        parts = sections(text)
        for line in parts.get("OPTIONS", "").splitlines():
            match = OPTION.match(line)
            if match and f"Fl {match.group(2)[1:]}" not in entry:
                missing.append(f"sightline {' '.join(path)} {match.group(2)}")
            if match and match.group(1) and f"Fl {match.group(1)[1:-2]}" not in entry:
                missing.append(f"sightline {' '.join(path)} {match.group(1)[:-2]}")
        for line in parts.get("ARGUMENTS", "").splitlines():
            match = ARGUMENT.match(line)
            if match and f"Ar {match.group(1)}" not in entry:
                missing.append(f"sightline {' '.join(path)} <{match.group(1)}>")
    assert not missing, f"not in docs/sightline.1 (run `make man` and commit it): {missing}"


def test_man_renders_every_flag():
    """What `man ./docs/sightline.1` shows names every long flag of every subcommand."""
    if shutil.which("man") is None:
        pytest.skip("man is not installed")
    run = subprocess.run(["man", "-l", str(PAGE)], capture_output=True, text=True, timeout=60,
                         env={"MANWIDTH": "200", "PATH": "/usr/bin:/bin", "MANPAGER": "cat", "PAGER": "cat"})
    assert run.returncode == 0, run.stderr
    shown = re.sub(r".\x08", "", run.stdout)
    flags = {match.group(2) for _, text in commands() for line in text.splitlines()
             if (match := OPTION.match(line))}
    assert not [flag for flag in sorted(flags) if flag not in shown], shown[:2000]
    for name in ("serve", "detect", "bench", "token", "add", "list", "revoke"):
        assert re.search(rf"^\s+{name}\s", shown, re.M), name
