# scripts/gpu/flash_kernels.py - FlashAttention (PyTorch SDPA, flash backend) kernel times on one
# GPU, GPU time only: the blocks of scripts/gpu/flash_blocks.py (causal s x s, dense s x s and
# the dense half blocks of a context-parallel ring) over several head counts and batches, each
# timed by the PyTorch profiler's own kernel durations (every CUDA kernel the call launches,
# summed, per call), after a second of warm-up that raises the clocks. flash_blocks.py timed the
# calls with CUDA events around a loop, and up to 2,048 tokens its causal and dense blocks took
# the same time: the call, not the tiles (docs/context-parallelism.md, "Not modelled"). This
# measures what a fit of the kernel's rate against its work needs.
# Writes $OUT/flash_kernels.csv; `--quick` runs a few rows. bf16, head dim 128.
import os, sys, time, torch
from torch.profiler import profile, ProfilerActivity

from flash_blocks import bench  # the same calls, timed here by the kernels' own durations

dev = "cuda"
hd, n = 128, 10
quick = "--quick" in sys.argv
heads = [16] if quick else [12, 16, 24, 48, 96]
seqs = [1024, 2048] if quick else [512, 1024, 2048, 4096, 8192, 16384, 32768]


def warm(seconds=1.0):
    """Keeps the GPU busy long enough for its clocks to rise."""
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    t0 = time.time()
    while time.time() - t0 < seconds:
        a @ a
    torch.cuda.synchronize()


def kernel_s(fn):
    """GPU time of the kernels one call of fn launches, from the profiler: their total over n
    calls, over n (only CUDA activity is recorded, so each kernel is counted once)."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    us = sum(e.self_device_time_total for e in prof.key_averages())
    return us / n / 1e6


rows = []
warm()
for h in heads:
    for s in seqs:
        b = 1
        if h * s * s * hd * 4 > 8.8e12 * (1 if not quick else 0.01):  # keep each row under ~30 ms
            continue
        for sq, sk, causal in [(s, s, True), (s, s, False), (s, s // 2, False), (s // 2, s, False)]:
            tf, tb = bench(sq, sk, causal, b=b, h=h, timer=kernel_s)
            flop = 4.0 * b * h * sq * sk * hd * (0.5 if causal else 1.0)
            rows.append((b, h, sq, sk, int(causal), tf, tb, flop / tf / 1e12,
                         2.5 * flop / tb / 1e12))
            print(rows[-1], flush=True)

with open(os.path.join(os.environ.get("OUT", "."), "flash_kernels.csv"), "w") as fh:
    fh.write("# %s, torch %s, cuda %s; kernel times from the profiler, after 1 s of warm-up\n"
             % (torch.cuda.get_device_name(), torch.__version__, torch.version.cuda))
    fh.write("batch,heads,sq,sk,causal,fwd_s,bwd_s,fwd_tflops_computed,bwd_tflops_computed\n")
    for r in rows:
        fh.write("%d,%d,%d,%d,%d,%.9g,%.9g,%.2f,%.2f\n" % r)
