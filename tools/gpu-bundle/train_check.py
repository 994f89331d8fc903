"""Training steps of one model on the GPU with PyTorch's CUDA allocator or
with tensormem's (CUDAPluggableAllocator), for the GPU bundle's check.

The allocator can be chosen only before the first CUDA allocation, so each
run is its own process; gpu-check.sh runs every model once per allocator and
compare_training.py compares the JSON results (parameters bit for bit, peak
reserved, median step time).

  python3 train_check.py --model resnet50 --allocator tensormem --policy tight \
      --steps 30 --out resnet50.tensormem.json

With --snapshot PATH (PyTorch's allocator only) the run is also recorded as a
memory snapshot (.pickle.gz): a real training loop, every iteration the same,
for the planned policy's tests and `tensormem whatif`.

Exit codes: 0 ran, 1 failed (the JSON says why where it could be written),
77 no CUDA-enabled PyTorch or no GPU.
"""

import argparse
import hashlib
import json
import os
import sys
import time
import traceback

# cuBLAS is deterministic only with a fixed workspace (set before torch loads).
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))


def build_resnet50(torch, batch):
    import torchvision  # noqa: PLC0415  (only this model needs it)

    model = torchvision.models.resnet50(weights=None)
    inputs = torch.randn(batch, 3, 224, 224)
    targets = torch.randint(0, 1000, (batch,))
    return model, inputs, targets


def build_gpt2_small(torch, batch):
    """A GPT-2-small-sized decoder (12 layers, 768 wide, 12 heads, 1024 tokens)."""
    nn = torch.nn
    vocab, width, layers, heads, context = 50257, 768, 12, 12, 1024

    class Gpt(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(vocab, width)
            self.positions = nn.Embedding(context, width)
            layer = nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0,
                                               activation="gelu", batch_first=True,
                                               norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.norm = nn.LayerNorm(width)
            self.head = nn.Linear(width, vocab, bias=False)
            self.head.weight = self.tokens.weight  # tied, as in GPT-2
            nn.init.normal_(self.tokens.weight, std=0.02)
            nn.init.normal_(self.positions.weight, std=0.02)
            self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(context),
                                 persistent=False)

        def forward(self, ids):
            positions = torch.arange(ids.shape[1], device=ids.device)
            hidden = self.tokens(ids) + self.positions(positions)
            hidden = self.blocks(hidden, mask=self.mask)
            return self.head(self.norm(hidden))

    model = Gpt()
    ids = torch.randint(0, vocab, (batch, context))
    return model, ids, torch.roll(ids, -1, dims=1)


MODELS = {"resnet50": (build_resnet50, 64), "gpt2-small": (build_gpt2_small, 8)}


def enable_tensormem(policy, config, sub_allocator):
    from tensormem_torch.cuda import enable_cuda  # noqa: PLC0415

    enable_cuda(policy=policy, config=config, sub_allocator=sub_allocator)


def reserved(torch, allocator, result):
    """Peak and final reserved bytes; with tensormem also its device counters
    (the planned policy's steady-state peak among them)."""
    if allocator == "pytorch":
        result["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        result["final_reserved_bytes"] = torch.cuda.memory_reserved()
        return
    from tensormem_torch.cuda import cuda_stats  # noqa: PLC0415

    stats = cuda_stats()["devices"]["0"]
    result["peak_reserved_bytes"] = stats["peak_pool_bytes"]
    result["final_reserved_bytes"] = stats["pool_bytes"]
    result["tensormem_stats"] = stats


def start_recording(torch, path):
    if path:
        torch.cuda.memory._record_memory_history(max_entries=1_000_000, context=None,
                                                 stacks="python")


def save_recording(torch, path):
    if not path:
        return
    import gzip  # noqa: PLC0415
    import pickle  # noqa: PLC0415

    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    with gzip.open(path, "wb", compresslevel=9) as out:
        pickle.dump(snapshot, out)


def train(args, result):
    import torch  # noqa: PLC0415

    if not torch.cuda.is_available():
        result["error"] = "PyTorch sees no GPU (torch.cuda.is_available() is False)"
        return 77
    if args.allocator == "tensormem":
        enable_tensormem(args.policy, args.config, args.sub_allocator)
    start_recording(torch, args.snapshot)
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=True)  # some backward kernels alert
    # The fused attention kernels' backward passes accumulate with atomics
    # (GPT-2's parameters differed between two runs of PyTorch's own
    # allocator on an H200): attention runs on the math kernels only.
    for backend in ("flash", "mem_efficient", "cudnn"):
        switch = getattr(torch.backends.cuda, f"enable_{backend}_sdp", None)
        if switch is not None:
            switch(False)
    build, batch = MODELS[args.model]
    model, inputs, targets = build(torch, args.batch or batch)
    model = model.cuda().train()
    inputs, targets = inputs.cuda(), targets.cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loss_function = torch.nn.CrossEntropyLoss()
    step_seconds = []
    mark = None
    if args.mark_iterations and args.allocator == "tensormem":
        from tensormem_torch.cuda import cuda_mark_iteration as mark  # noqa: PLC0415
    for _ in range(args.warmup + args.steps):
        if mark is not None:
            mark()
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.bf16):
            logits = model(inputs)
        loss = loss_function(logits.float().flatten(0, -2), targets.flatten())
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        step_seconds.append(time.perf_counter() - start)
    save_recording(torch, args.snapshot)
    timed = sorted(step_seconds[args.warmup:])
    digest = hashlib.sha256()
    for parameter in model.parameters():
        digest.update(parameter.detach().float().cpu().numpy().tobytes())
    result.update({
        "batch": args.batch or batch,
        "steps": args.steps,
        "median_step_ms": timed[len(timed) // 2] * 1e3,
        "final_loss": float(loss),
        "parameters_sha256": digest.hexdigest(),
        "peak_allocated_bytes": torch.cuda.max_memory_allocated()
        if args.allocator == "pytorch" else None,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0),
    })
    reserved(torch, args.allocator, result)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), required=True)
    parser.add_argument("--allocator", choices=["pytorch", "tensormem"], required=True)
    parser.add_argument("--policy", default="tight", help="tensormem's policy")
    parser.add_argument("--config", default="", help="the policy's configuration")
    parser.add_argument("--sub-allocator", default="cuda-vmm", help="tensormem's upstream")
    parser.add_argument("--batch", type=int, default=0, help="0: the model's own")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--bf16", action="store_true", help="autocast to bfloat16")
    parser.add_argument("--mark-iterations", action="store_true",
                        help="mark each step for the planned policy")
    parser.add_argument("--snapshot", default="", help="record PyTorch's allocator here")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    if args.snapshot and args.allocator != "pytorch":
        parser.error("--snapshot records PyTorch's own allocator (--allocator pytorch)")
    result = {"model": args.model, "allocator": args.allocator,
              "policy": args.policy if args.allocator == "tensormem" else None,
              "config": args.config if args.allocator == "tensormem" else None,
              "marked": args.mark_iterations and args.allocator == "tensormem",
              "sub_allocator": args.sub_allocator if args.allocator == "tensormem" else None}
    try:
        code = train(args, result)
    except Exception as error:  # noqa: BLE001  (reported in the JSON, then exit 1)
        traceback.print_exc()
        result["error"] = f"{type(error).__name__}: {error}"
        if args.allocator == "tensormem":
            try:
                from tensormem_torch.cuda import cuda_last_error  # noqa: PLC0415
                result["tensormem_last_error"] = cuda_last_error()
            except Exception:  # noqa: BLE001
                pass
        code = 1
    with open(args.out, "w") as out:
        json.dump(result, out, indent=2)
    print(json.dumps(result))
    return code


if __name__ == "__main__":
    sys.exit(main())
