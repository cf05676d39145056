#!/usr/bin/env python3
"""Fails when a Swift file imports a module its layer must not.

The layers (docs/architecture.md): each Sightline target may import only the
Sightline targets below it in LAYERS, and Package.swift must declare no other
dependency between them. Every module a file imports must also be among its
target's dependencies in Package.swift (C shims, packages), so an import that
only builds by accident (a module another target brought in) is caught too.

Run by `make test` (and on its own: python3 scripts/check-layers.py); exits 1
with one line per offence.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# Which Sightline targets each target may depend on (the layer rules).
LAYERS = {
    "SightlineSupport": set(),
    "SightlineVision": {"SightlineSupport"},
    "SightlinePipeline": {"SightlineSupport", "SightlineVision"},
    # HTTP knows requests, answers, connections, access and TLS: nothing of frames or images.
    "SightlineHTTP": {"SightlineSupport"},
    "SightlineStreaming": {"SightlineSupport", "SightlineVision", "SightlinePipeline", "SightlineHTTP"},
    # Events, clips, recordings and MQTT need no HTTP: their APIs are routes assembled in Core.
    "SightlineEvents": {"SightlineSupport", "SightlineVision", "SightlinePipeline"},
    "SightlineCore": {"SightlineSupport", "SightlineVision", "SightlinePipeline", "SightlineHTTP",
                      "SightlineStreaming", "SightlineEvents"},
    "sightline": {"SightlineSupport", "SightlineVision", "SightlinePipeline", "SightlineHTTP",
                  "SightlineStreaming", "SightlineEvents", "SightlineCore"},
}
# The tests' helpers and one test target per layer, each with the layers below it only
# (a vision test builds without the server's, the streaming or the events' code: the shared
# fixtures in SightlineTesting reach down to the pipeline only).
HELPERS = {
    "SightlineTesting": {"SightlineSupport", "SightlineVision", "SightlinePipeline"},
    "SightlineHTTPTesting": {"SightlineSupport", "SightlineHTTP"},
    "SightlineEventsTesting": {"SightlineSupport", "SightlineVision", "SightlinePipeline", "SightlineEvents"},
}
for _layer in list(LAYERS):
    if _layer == "sightline":
        continue
    _helpers = {"SightlineTesting"}
    if "SightlineHTTP" in LAYERS[_layer] | {_layer}:
        _helpers.add("SightlineHTTPTesting")
    if "SightlineEvents" in LAYERS[_layer] | {_layer}:
        _helpers.add("SightlineEventsTesting")
    LAYERS[_layer + "Tests"] = LAYERS[_layer] | {_layer} | _helpers
LAYERS.update(HELPERS)
LAYER_MODULES = {name for name in LAYERS if not name.endswith("Tests") and name != "sightline"}

# Modules of the toolchain and the system, which need no dependency.
SYSTEM = {"Foundation", "FoundationEssentials", "Dispatch", "Glibc", "Synchronization", "Testing", "XCTest",
          "_Concurrency", "os"}
# Package products by the module names files import.
PRODUCT_MODULES = {"Logging": "Logging", "ArgumentParser": "ArgumentParser", "Yams": "Yams"}

IMPORT = re.compile(r"^\s*(?:@testable\s+|@preconcurrency\s+|package\s+|public\s+|internal\s+)*import\s+(?:(?:struct|class|enum|func|var|let|protocol|typealias)\s+)?([A-Za-z_][A-Za-z0-9_]*)")


def package_dependencies(text):
    """Each target's declared dependencies (target names and product names) from Package.swift."""
    deps = {}
    for match in re.finditer(r'\.(?:target|executableTarget|testTarget)\(\s*name:\s*"([^"]+)"(.*?)\n        \)', text, re.S):
        name, body = match.group(1), match.group(2)
        block = re.search(r"dependencies:\s*\[(.*?)\]\s*,?\s*(?:\n\s*(?:path|swiftSettings|cxxSettings|linkerSettings|resources|exclude)\b|\Z)", body, re.S)
        names = set()
        if block:
            listed = block.group(1)
            names |= set(re.findall(r'\.product\(name:\s*"([^"]+)"', listed))
            names |= set(re.findall(r'"([^"]+)"', re.sub(r'\.product\([^)]*\)', '', listed)))
        deps[name] = names
    return deps


def main():
    offences = []
    declared = package_dependencies((ROOT / "Package.swift").read_text())
    for target, allowed in LAYERS.items():
        if target not in declared:
            offences.append(f"Package.swift: no target {target}")
            continue
        for dep in sorted(d for d in declared[target] if d in LAYER_MODULES and d not in allowed):
            offences.append(f"Package.swift: {target} depends on {dep}, a layer it must not use")
    for target, deps in sorted(declared.items()):
        folder = ROOT / "Sources" / target
        if not folder.is_dir():
            folder = ROOT / "Tests" / target
        if not folder.is_dir() or target not in LAYERS:
            continue
        for path in sorted(folder.rglob("*.swift")):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                match = IMPORT.match(line)
                if not match:
                    continue
                module = match.group(1)
                where = f"{path.relative_to(ROOT)}:{number}"
                if module in SYSTEM or module == target:
                    continue
                if module in LAYER_MODULES and module not in LAYERS[target]:
                    offences.append(f"{where}: {target} imports {module}, a layer it must not use")
                elif module not in deps and PRODUCT_MODULES.get(module, module) not in deps:
                    offences.append(f"{where}: {target} imports {module}, which Package.swift does not give it")
    for offence in offences:
        print(offence)
    if offences:
        print(f"check-layers: {len(offences)} imports cross the layers (scripts/check-layers.py)")
        return 1
    print(f"check-layers: every import of {len(LAYERS)} targets (tests and their helpers included) keeps to its layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
