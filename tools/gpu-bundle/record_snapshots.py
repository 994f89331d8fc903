"""Records PyTorch's own CUDA caching allocator under one allocator setting:
a memory snapshot (torch.cuda.memory._dump_snapshot) of a small, varied
workload, saved as .pickle.gz. These recordings are ground truth that
`tensormem replay SNAPSHOT --policy pytorch` must reproduce.

  PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128 python3 record_snapshots.py \
      --name max_split_128 --out max_split_128.pickle.gz

The setting comes from PYTORCH_CUDA_ALLOC_CONF (read when torch loads);
--streams 2 moves part of the work to a second stream; --memory-fraction caps
the process (garbage_collection_threshold acts only under a cap).
Exit codes: 0 recorded, 1 failed, 77 no CUDA-enabled PyTorch or no GPU.
"""

import argparse
import gzip
import json
import pickle
import random
import sys


def workload(torch, steps, streams):
    """A small transformer trained on varying sequence lengths, with buffers of
    random sizes (1 KiB to 192 MiB) kept alive across steps: small and large
    pools, splits, oversize blocks and frees in every order."""
    nn = torch.nn
    rng = random.Random(0)
    layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
    model = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    side = torch.cuda.Stream() if streams > 1 else None
    kept = []
    for step in range(steps):
        length = rng.choice([64, 96, 128, 192, 256, 384, 512])
        batch = rng.choice([4, 8, 16])
        inputs = torch.randn(batch, length, 256, device="cuda")
        loss = model(inputs).square().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        for _ in range(rng.randint(1, 6)):
            size = int(2 ** rng.uniform(10, 27.6))
            if side is not None and rng.random() < 0.5:
                with torch.cuda.stream(side):
                    kept.append(torch.empty(size, dtype=torch.uint8, device="cuda").fill_(1))
            else:
                kept.append(torch.empty(size, dtype=torch.uint8, device="cuda"))
        rng.shuffle(kept)
        while sum(t.numel() for t in kept) > 600 * 2**20 or (kept and rng.random() < 0.3):
            kept.pop()
        if side is not None:
            side.synchronize()
    torch.cuda.synchronize()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", required=True)
    parser.add_argument("--out", required=True, help="the snapshot, .pickle.gz")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--streams", type=int, choices=[1, 2], default=1)
    parser.add_argument("--memory-fraction", type=float, default=0.0)
    args = parser.parse_args()
    import torch  # noqa: PLC0415  (after argparse: --help needs no torch)

    if not torch.cuda.is_available():
        print("record_snapshots: PyTorch sees no GPU", file=sys.stderr)
        return 77
    if args.memory_fraction:
        torch.cuda.set_per_process_memory_fraction(args.memory_fraction)
    torch.manual_seed(0)
    torch.cuda.memory._record_memory_history(max_entries=1_000_000, context=None,
                                             stacks="python")
    workload(torch, args.steps, args.streams)
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    with gzip.open(args.out, "wb", compresslevel=9) as out:
        pickle.dump(snapshot, out)
    stats = torch.cuda.memory_stats()
    print(json.dumps({"name": args.name, "events": sum(len(t) for t in snapshot["device_traces"]),
                      "peak_reserved_bytes": stats["reserved_bytes.all.peak"],
                      "peak_allocated_bytes": stats["allocated_bytes.all.peak"],
                      "num_alloc_retries": stats["num_alloc_retries"],
                      "settings": snapshot.get("allocator_settings")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
