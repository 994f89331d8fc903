#include "torch/torch_cpu_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <atomic>

namespace tensormem {
namespace {

// The allocator every tensormem DataPtr returns its memory to. Set once and
// never cleared, so tensors freed during interpreter shutdown still find it.
std::atomic<PluginAllocator*> g_installed{nullptr};

// Above c10's default CPU allocator (priority 0).
constexpr uint8_t kPriority = 10;

void FreeTensorMemory(void* ptr) {
  g_installed.load(std::memory_order_acquire)->Free(ptr);
}

class TensormemCpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) const override {
    PluginAllocator* allocator = g_installed.load(std::memory_order_acquire);
    void* data = allocator->Allocate(bytes);
    if (data == nullptr && bytes != 0) {
      throw c10::OutOfMemoryError(
          {__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
          allocator->FailureReport(bytes));
    }
    return {data, data, &FreeTensorMemory, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &FreeTensorMemory; }
};

}  // namespace

void InstallAsTorchCpuAllocator(PluginAllocator* allocator) {
  static TensormemCpuAllocator torch_allocator;
  g_installed.store(allocator, std::memory_order_release);
  c10::SetCPUAllocator(&torch_allocator, kPriority);
}

}  // namespace tensormem
