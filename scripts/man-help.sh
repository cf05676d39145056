#!/bin/sh
# The command's definitions as swift-argument-parser's generate-manual reads them
# (`sightline --experimental-dump-help`), with the hidden flags marked shown: the tool
# leaves hidden ones out, and docs/sightline.1 lists every flag `--help-hidden` shows.
# Used by `make man`; SIGHTLINE_BIN is the binary (default .build/release/sightline).
set -eu
"${SIGHTLINE_BIN:-.build/release/sightline}" "$@" | python3 -c '
import json, sys

def show(command):
    for argument in [] if command.get("commandName") == "help" else command.get("arguments", []):
        argument["shouldDisplay"] = True
    for sub in command.get("subcommands", []):
        show(sub)

dump = json.load(sys.stdin)
show(dump["command"])
json.dump(dump, sys.stdout)
'
