# scripts/gpu/flash_blocks.py - FlashAttention (PyTorch SDPA, flash backend) forward and backward times on
# one GPU for the blocks context parallelism runs: causal s x s (a ring's first step, and the
# whole attention without CP) and dense half blocks (s x s/2, s/2 x s: the later ring steps),
# bf16, head dim 128, 16 heads, batch 1. CUDA events around 10 calls after 3 warm-up calls;
# backward = (forward + backward) - forward. Writes $OUT/flash_blocks.csv.
import os, torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

dev = "cuda"
hd, h, b, n = 128, 16, 1, 10
rows = []


def timed(fn):
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(n):
        fn()
    e1.record()
    torch.cuda.synchronize()
    return e0.elapsed_time(e1) / n / 1e3


def bench(sq, sk, causal, b=b, h=h, timer=timed):
    """Forward and backward seconds of one call on b x h heads of sq queries by sk keys, timed by
    timer (a function of a callable); scripts/gpu/flash_kernels.py passes its own."""
    mk = lambda s: torch.randn(b, h, s, hd, device=dev, dtype=torch.bfloat16, requires_grad=True)
    q, k, v = mk(sq), mk(sk), mk(sk)
    do = torch.randn(b, h, sq, hd, device=dev, dtype=torch.bfloat16)
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        f = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        fb = lambda: f().backward(do)
        for _ in range(3):
            fb()
        torch.cuda.synchronize()
        tf = timer(f)
        tfb = timer(fb)
    return tf, tfb - tf


if __name__ == "__main__":
    for s in [512, 1024, 2048, 4096, 8192, 16384, 32768]:
        for sq, sk, causal in [(s, s, True), (s, s, False), (s, s // 2, False), (s // 2, s, False)]:
            tf, tb = bench(sq, sk, causal)
            flop = 4.0 * b * h * sq * sk * hd * (0.5 if causal else 1.0)
            rows.append((sq, sk, int(causal), tf, tb, flop / tf / 1e12, 2.5 * flop / tb / 1e12))
            print(rows[-1], flush=True)

    with open(os.path.join(os.environ["OUT"], "flash_blocks.csv"), "w") as fh:
        fh.write("# %s, torch %s, cuda %s\n" % (torch.cuda.get_device_name(), torch.__version__,
                                                torch.version.cuda))
        fh.write("sq,sk,causal,fwd_s,bwd_s,fwd_tflops_computed,bwd_tflops_computed\n")
        for r in rows:
            fh.write("%d,%d,%d,%.9g,%.9g,%.2f,%.2f\n" % r)
