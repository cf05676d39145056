#!/usr/bin/env python3
"""Sums the per-test CPU log the e2e and browser suites write with SIGHTLINE_TEST_CPU=FILE
(Tests/conftest.py): total wall and CPU seconds, per file and the most costly tests.

    SIGHTLINE_TEST_CPU=/tmp/cpu.jsonl make test-e2e
    python3 scripts/test-cpu.py /tmp/cpu.jsonl [--top 25]
"""
import argparse
import collections
import json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    rows = [json.loads(line) for line in open(args.log) if line.strip()]
    files = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for row in rows:
        entry = files[row["test"].split("::")[0]]
        entry[0] += row["wall"]
        entry[1] += row["cpu"]
        entry[2] += 1
    print(f"{len(rows)} tests: wall {sum(r['wall'] for r in rows):.0f} s, cpu {sum(r['cpu'] for r in rows):.0f} s")
    print("\nper file (cpu s, wall s, tests):")
    for name, (wall, cpu, count) in sorted(files.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"  {cpu:7.1f} {wall:7.1f} {count:4d}  {name}")
    print("\nmost costly tests (cpu s, wall s):")
    for row in sorted(rows, key=lambda r: -r["cpu"])[:args.top]:
        print(f"  {row['cpu']:7.1f} {row['wall']:7.1f}  {row['test']}")


if __name__ == "__main__":
    main()
