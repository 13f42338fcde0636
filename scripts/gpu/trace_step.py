#!/usr/bin/env python3
"""trace_step.py - a small Megatron-style tensor-parallel training step, for recording real runs.

Runs `--layers` GPT layers at one TP rank's shard size (the shapes of Megatron 1D TP at degree
`--tp`: ln1, QKV, attention as two batched GEMMs with a softmax between, projection, all-reduce,
dropout + residual, ln2, FC1, GeLU, FC2, all-reduce, dropout + residual), forward then backward
layer by layer, `--warmup` + `--iters` times. The all-reduces are real NCCL calls over all the
processes started (torch.distributed, NCCL; world size 1 on a one-GPU machine, where NCCL copies
nothing). Each iteration is an NVTX range "iteration N", each layer's forward and backward an NVTX
range and a profiler annotation "layer N forward" / "layer N backward", so tpsim's tracer
(LD_PRELOAD, NVTX_INJECTION64_PATH) and `tpsim import kineto` find the same iterations and layers.

With `--kineto FILE` the PyTorch profiler (CPU + CUDA activity, shapes) records the `--iters`
iterations after the warm-up in the same process, so the tracer and the profiler see the same
kernels. Prints one JSON line: the configuration, versions, and CUDA-event times per iteration.

Run by scripts/gpu/device-check.sh; docs/tracer.md says what the recordings showed.
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F


class CopyToTP(torch.autograd.Function):
    """Megatron's f: identity in forward, all-reduce of the gradient in backward."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        dist.all_reduce(g)
        return g


class ReduceFromTP(torch.autograd.Function):
    """Megatron's g: all-reduce in forward, identity in backward."""

    @staticmethod
    def forward(ctx, x):
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


class ShardLayer(torch.nn.Module):
    def __init__(self, hidden, heads, tp, dtype, dev):
        super().__init__()
        assert heads % tp == 0 and hidden % heads == 0
        self.hidden, self.local_heads, self.head_dim = hidden, heads // tp, hidden // heads
        ffn = 4 * hidden // tp

        def param(*shape):
            return torch.nn.Parameter(0.02 * torch.randn(*shape, device=dev, dtype=dtype))

        self.ln1 = (param(hidden), param(hidden))
        self.ln2 = (param(hidden), param(hidden))
        for i, t in enumerate(self.ln1 + self.ln2):
            self.register_parameter(f"norm{i}", t)
        self.w_qkv = param(3 * self.local_heads * self.head_dim, hidden)
        self.w_proj = param(hidden, self.local_heads * self.head_dim)
        self.w_fc1 = param(ffn, hidden)
        self.w_fc2 = param(hidden, ffn)

    def forward(self, x):  # x: [s, b, h]
        s, b, h = x.shape
        a, d = self.local_heads, self.head_dim
        y = CopyToTP.apply(F.layer_norm(x, (h,), *self.ln1))
        q, k, v = F.linear(y, self.w_qkv).view(s, b, a, 3 * d).split(d, dim=-1)
        q, k, v = (t.reshape(s, b * a, d).transpose(0, 1) for t in (q, k, v))
        probs = F.softmax(torch.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(d)), dim=-1)
        ctx = torch.bmm(probs, v).transpose(0, 1).reshape(s, b, a * d)
        x = x + F.dropout(ReduceFromTP.apply(F.linear(ctx, self.w_proj)), 0.1, self.training)
        y = CopyToTP.apply(F.layer_norm(x, (h,), *self.ln2))
        y = F.linear(F.gelu(F.linear(y, self.w_fc1)), self.w_fc2)
        return x + F.dropout(ReduceFromTP.apply(y), 0.1, self.training)


class Mark:
    """An NVTX range and a profiler annotation of the same name."""

    def __init__(self, name):
        self.name, self.rf = name, torch.profiler.record_function(name)

    def __enter__(self):
        torch.cuda.nvtx.range_push(self.name)
        self.rf.__enter__()

    def __exit__(self, *exc):
        self.rf.__exit__(*exc)
        torch.cuda.nvtx.range_pop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--tp", type=int, default=4, help="TP degree whose shard shapes one rank runs")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--kineto", help="write a profiler trace of the iterations after warm-up here")
    args = ap.parse_args()

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank)))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(1234 + rank)

    dtype = torch.bfloat16
    layers = [ShardLayer(args.hidden, args.heads, args.tp, dtype, dev) for _ in range(args.layers)]
    x0 = torch.randn(args.seq, args.batch, args.hidden, device=dev, dtype=dtype)

    prof = None
    if args.kineto:
        from torch.profiler import ProfilerActivity, profile, schedule

        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True,
                       schedule=schedule(wait=0, warmup=args.warmup, active=args.iters, repeat=1),
                       on_trace_ready=lambda p: p.export_chrome_trace(args.kineto))
        prof.start()
    times = []
    for it in range(args.warmup + args.iters):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with Mark(f"iteration {it}"):
            e0.record()
            x, ins, outs = x0, [], []
            for li, layer in enumerate(layers):
                with Mark(f"layer {li} forward"):
                    xi = x.detach().requires_grad_(True)
                    x = layer(xi)
                ins.append(xi)
                outs.append(x)
            g = torch.ones_like(x)
            for li in reversed(range(args.layers)):
                with Mark(f"layer {li} backward"):
                    outs[li].backward(g)
                g = ins[li].grad
            e1.record()
        torch.cuda.synchronize()
        times.append(e0.elapsed_time(e1) * 1e-3)
        for layer in layers:
            for p in layer.parameters():
                p.grad = None
        if prof is not None:
            prof.step()
    if prof is not None:
        prof.stop()
    out = dict(vars(args), rank=rank, world_size=world, device=torch.cuda.get_device_name(dev),
               torch=torch.__version__, cuda=torch.version.cuda,
               nccl=str(torch.cuda.nccl.version()), iter_s=times)
    print(json.dumps(out), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
