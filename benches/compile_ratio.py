#!/usr/bin/env python3
"""Compile time as a ratio of check time, per example and pipelining path, measured in one run.

`nkc check FILE` (front end, the annotated pipeliner and its ISL check) against
`nkc compile FILE --emit isa --pipeline P` (everything, down to the pseudo-ISA), both whole
processes of the release binary, interleaved and repeated so that machine load cancels out in the
ratio (the median of each). Usage: `python3 benches/compile_ratio.py [REPEATS [GLOB]]` after
`cargo build --release`; prints a Markdown table and the largest ratio. It also gives the largest
ratio of the minimums: noise on a shared machine only adds time (other tenants' work, page
faults), and a longer process catches more of it, so the fastest runs of each command are the
closest to its own work.
"""
import glob
import statistics
import subprocess
import sys
import time

NKC = "target/release/nkc"
PATHS = ["default", "annotated", "emergent", "none", "auto"]


def seconds(args):
    t = time.perf_counter()
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print("| example | check (ms) | " + " | ".join(f"{p} (ms, ×check)" for p in PATHS) + " |")
    print("| --- | ---: | " + " | ".join("---:" for _ in PATHS) + " |")
    worst = (0.0, "")
    worst_min = (0.0, "")
    pattern = sys.argv[2] if len(sys.argv) > 2 else "examples/*.nk"
    for f in sorted(glob.glob(pattern)):
        check, compile_ = [], {p: [] for p in PATHS}
        for _ in range(repeats):
            check.append(seconds([NKC, "check", f]))
            for p in PATHS:
                compile_[p].append(seconds([NKC, "compile", f, "--emit", "isa", "--pipeline", p]))
        c = statistics.median(check)
        cells = []
        for p in PATHS:
            m = statistics.median(compile_[p])
            cells.append(f"{1e3 * m:.1f} ({m / c:.2f}×)")
            if m / c > worst[0]:
                worst = (m / c, f"{f} {p}")
            r = min(compile_[p]) / min(check)
            if r > worst_min[0]:
                worst_min = (r, f"{f} {p}")
        print(f"| {f} | {1e3 * c:.1f} | " + " | ".join(cells) + " |")
    print(f"\nlargest ratio: {worst[0]:.2f}× ({worst[1]})")
    print(f"largest ratio of the minimums: {worst_min[0]:.2f}× ({worst_min[1]})")


if __name__ == "__main__":
    main()
