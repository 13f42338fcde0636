#!/usr/bin/env python3
"""host_speed.py - the host CPU's speed over time, beside the cost of an eager kernel launch.

Alternates, for `--seconds`, two fixed pieces of host work and times each with perf_counter:
  cpu:    a pure-Python arithmetic loop (`--cpu-iters` steps; no GPU, no system call);
  launch: `--launches` eager PyTorch launches of a one-element in-place add on the GPU (the
          host's side of a kernel launch: dispatcher, caching allocator, CUDA runtime call).
A host whose speed changes (another guest on the core's sibling thread, the package's clock)
slows both at the same moments; a launch path that stalls by itself slows only the second.
Writes one CSV line per sample (t_s, cpu_s, launch_s) to `--out` and prints a JSON summary:
percentiles of each, and the correlation of the two series.

Run by scripts/gpu/device-check.sh (HOST_SPEED=1); docs/compute-model.md says what it showed.
"""
import argparse
import json
import statistics
import time

import torch


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--cpu-iters", type=int, default=20000)
    ap.add_argument("--launches", type=int, default=50)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    x = torch.zeros(1, device="cuda")
    for _ in range(100):  # warm the launch path
        x.add_(1)
    torch.cuda.synchronize()
    rows = []
    t_end = time.perf_counter() + args.seconds
    t0 = time.perf_counter()
    n = args.cpu_iters
    while time.perf_counter() < t_end:
        a = time.perf_counter()
        v = 1.0
        for _ in range(n):
            v = v * 1.0000001 + 1e-9
        b = time.perf_counter()
        for _ in range(args.launches):
            x.add_(1)
        c = time.perf_counter()
        rows.append((a - t0, b - a, (c - b) / args.launches))
        if len(rows) % 64 == 0:
            torch.cuda.synchronize()  # keep the launch queue short
    torch.cuda.synchronize()
    with open(args.out, "w") as f:
        f.write("t_s,cpu_s,launch_s\n")
        for r in rows:
            f.write("%.6f,%.9g,%.9g\n" % r)
    cpu = [r[1] for r in rows]
    lau = [r[2] for r in rows]
    out = dict(samples=len(rows), cpu_iters=n, launches=args.launches,
               corr=statistics.correlation(cpu, lau) if len(rows) > 2 else None)
    for name, xs in (("cpu", cpu), ("launch", lau)):
        for q in (0.01, 0.1, 0.5, 0.9, 0.99):
            out[f"{name}_p{int(q * 100)}_s"] = pct(xs, q)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
