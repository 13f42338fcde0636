#!/usr/bin/env python3
"""layer_host.py - the host's side of eager layer shards: launch time per layer and per kernel.

For each configuration (the JSON list that ../shared/tools/gpu/layer.py takes), builds the same
layers with that script's `Layer` class (`--layer-py PATH`) and times, per layer, forward and
backward twice: the host's wall time of the Python call (perf_counter around `layer(x)` and around
`backward()`, which returns once autograd has launched every kernel) and the GPU's CUDA-event time,
over `iters` iterations after `warmup`. One more iteration under the PyTorch profiler counts the
kernels each layer launches forward and backward, so host time / kernels is the host's cost per
launched kernel: what tpsim's `launch_overhead` and `backward_launch_overhead` stand for.

Prints one JSON line per configuration: medians, 10th and 90th percentiles (seconds per layer).
Run by scripts/gpu/device-check.sh; docs/compute-model.md says what it showed.
"""
import argparse
import importlib.util
import json
import statistics
import time

import torch


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))]


def count_device_ops(fn):
    """GPU kernels and memory operations (memset, memcpy) that fn launches, from the profiler."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    kernels = mem = 0
    for e in prof.events():
        if not str(e.device_type).endswith("CUDA"):
            continue
        name = e.name.lower()
        if "memset" in name or "memcpy" in name:
            mem += 1
        else:
            kernels += 1
    if kernels + mem == 0:  # a profiler that keeps device events only under their launches
        kernels = sum(len(e.kernels) for e in prof.events())
    return kernels, mem


def count_kernels(layer, x0):
    """(kernels, memory ops) one layer launches in forward, then in backward."""
    xi = x0.detach().requires_grad_(True)
    box = {}
    fwd = count_device_ops(lambda: box.setdefault("y", layer(xi)))
    y = box["y"]
    g = torch.ones_like(y)
    bwd = count_device_ops(lambda: y.backward(g))
    for p in layer.parameters():
        p.grad = None
    return fwd, bwd


def run(mod, cfg, dev):
    h, a, s, b, tp, L = cfg["hidden"], cfg["heads"], cfg["seq"], cfg["batch"], cfg["tp"], cfg["layers"]
    dtype = getattr(torch, cfg["dtype"])
    layers = [mod.Layer(h, a, 4 * h, tp, dtype, dev, cfg.get("attn", "bmm")) for _ in range(L)]
    x0 = torch.randn(s, b, h, device=dev, dtype=dtype)
    E = lambda: torch.cuda.Event(enable_timing=True)
    hf, hb, gf, gb = [], [], [], []
    for i in range(cfg["warmup"] + cfg["iters"]):
        rows = []
        x, ins, outs = x0, [], []
        for layer in layers:
            xi = x.detach().requires_grad_(True)
            e0, e1 = E(), E()
            t0 = time.perf_counter()
            e0.record()
            y = layer(xi)
            e1.record()
            rows.append(("f", time.perf_counter() - t0, e0, e1))
            ins.append(xi)
            outs.append(y)
            x = y
        g = torch.ones_like(x)
        for li in reversed(range(L)):
            e0, e1 = E(), E()
            t0 = time.perf_counter()
            e0.record()
            outs[li].backward(g)
            e1.record()
            rows.append(("b", time.perf_counter() - t0, e0, e1))
            g = ins[li].grad
        torch.cuda.synchronize()
        for l in layers:
            for p in l.parameters():
                p.grad = None
        if i >= cfg["warmup"]:
            for ph, host, e0, e1 in rows:
                (hf if ph == "f" else hb).append(host)
                (gf if ph == "f" else gb).append(e0.elapsed_time(e1) * 1e-3)
    (kf, mf), (kb, mb) = count_kernels(layers[0], x0)
    del layers
    torch.cuda.empty_cache()
    med = statistics.median
    out = dict(cfg, kernels_fwd=kf, memops_fwd=mf, kernels_bwd=kb, memops_bwd=mb)
    for name, xs in (("host_fwd", hf), ("host_bwd", hb), ("gpu_fwd", gf), ("gpu_bwd", gb)):
        out[f"{name}_s_median"] = med(xs)
        out[f"{name}_s_p10"] = pct(xs, 0.1)
        out[f"{name}_s_p90"] = pct(xs, 0.9)
    out["host_per_launch_fwd_s"] = med(hf) / (kf + mf) if kf + mf else None
    out["host_per_launch_bwd_s"] = med(hb) / (kb + mb) if kb + mb else None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layer-py", required=True, help="path of shared/tools/gpu/layer.py")
    ap.add_argument("--configs", required=True, help="JSON list of configs, or @file")
    args = ap.parse_args()
    spec = importlib.util.spec_from_file_location("layer", args.layer_py)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    src = args.configs
    cfgs = json.load(open(src[1:])) if src.startswith("@") else json.loads(src)
    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    torch.backends.cuda.matmul.allow_tf32 = False
    for c in cfgs:
        c = dict(dict(batch=1, layers=2, warmup=3, iters=10, dtype="bfloat16"), **c)
        if c.get("execution", "eager") != "eager":
            continue
        try:
            r = run(mod, c, dev)
        except Exception as e:  # keep going: record what failed
            r = dict(c, error=f"{type(e).__name__}: {str(e)[:300]}")
        print(json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
