"""README.md's Requirements name every Debian package scripts/setup.sh installs (with and
without --tests), so the list a newcomer reads cannot fall behind the script."""

import re

from conftest import REPO


def setup_packages() -> set[str]:
    script = (REPO / "scripts" / "setup.sh").read_text()
    found = set()
    for name in ("debian_packages", "test_packages"):
        block = re.search(rf"^{name}=\((.*?)^\)", script, re.S | re.M)
        assert block, f"no {name}=( ... ) in scripts/setup.sh"
        for line in block.group(1).splitlines():
            found.update(line.split("#", 1)[0].split())
    found.update(re.findall(r"debian_packages\+=\((\w+)\)", script))   # nodejs, when node is missing
    return found


def test_readme_requirements_list_what_setup_installs():
    text = (REPO / "README.md").read_text()
    start = text.index("## Requirements")
    section = text[start:text.index("\n## ", start + 1)]
    packages = setup_packages()
    assert len(packages) > 20, packages
    missing = sorted(p for p in packages if not re.search(rf"(?<![\w.-]){re.escape(p)}(?![\w.-])", section))
    assert not missing, f"README.md's Requirements do not name: {missing}"
