// Installing a PluginAllocator as PyTorch's CPU allocator.
//
// The only torch-facing part of the plug-in: a c10::Allocator that hands out
// PluginAllocator memory and turns an out-of-memory into PyTorch's own
// OutOfMemoryError (a RuntimeError in Python) carrying tensormem's report.
//
//   PluginAllocator* allocator = ...;          // must live until the process
//   exits InstallAsTorchCpuAllocator(allocator);     // new CPU tensors come
//   from it
#ifndef TENSORMEM_TORCH_TORCH_CPU_ALLOCATOR_H_
#define TENSORMEM_TORCH_TORCH_CPU_ALLOCATOR_H_

#include "torch/plugin_allocator.h"

namespace tensormem {

// Sets `allocator` as c10's CPU allocator with a priority above the default
// one. Tensors allocated before keep their own deleter, so they are freed by
// the allocator that made them. `allocator` is never destroyed by this call.
void InstallAsTorchCpuAllocator(PluginAllocator* allocator);

}  // namespace tensormem

#endif  // TENSORMEM_TORCH_TORCH_CPU_ALLOCATOR_H_
