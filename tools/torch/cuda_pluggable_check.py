"""A few training steps of a torchvision model on the GPU, with PyTorch's own
CUDA allocator or with tensormem's (CUDAPluggableAllocator), for
tools/gpu-check.sh. The allocator can only be chosen before the first CUDA
allocation, so each run is its own process; gpu-check.sh runs it twice and
compares the two JSON results (outputs must be identical).

  python3 tools/torch/cuda_pluggable_check.py --allocator tensormem \
      --model resnet18 --steps 20 --out tensormem.json
"""

import argparse
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))

import torch  # noqa: E402

import models  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--allocator", choices=["pytorch", "tensormem"], required=True)
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    if not torch.cuda.is_available():
        print("cuda_pluggable_check: PyTorch sees no GPU", file=sys.stderr)
        return 77
    if args.allocator == "tensormem":
        from tensormem_torch.cuda import cuda_stats, enable_cuda  # noqa: PLC0415
        enable_cuda()  # the TENSORMEM_* environment, cuda-vmm by default

    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=True)
    model, example = models.build(args.model, batch=args.batch)
    model = model.cuda().train()
    inputs = example.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    step_seconds = []
    for _ in range(args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        output = model(inputs)
        output = output["out"] if isinstance(output, dict) else output
        loss = output.float().square().mean()
        loss.backward()
        optimizer.step()
        torch.cuda.synchronize()
        step_seconds.append(time.perf_counter() - start)

    digest = hashlib.sha256()
    for parameter in model.parameters():
        digest.update(parameter.detach().cpu().numpy().tobytes())
    result = {
        "allocator": args.allocator,
        "model": args.model,
        "median_step_ms": sorted(step_seconds)[len(step_seconds) // 2] * 1e3,
        "final_loss": float(loss),
        "parameters_sha256": digest.hexdigest(),
    }
    if args.allocator == "pytorch":
        result["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    else:
        stats = cuda_stats()["devices"]["0"]
        result["peak_reserved_bytes"] = stats["peak_pool_bytes"]
    with open(args.out, "w") as out:
        json.dump(result, out, indent=2)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
