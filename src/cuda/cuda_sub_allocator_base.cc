#include <cstdio>

#include "tensormem/cuda/cuda_sub_allocators.h"

namespace tensormem {

absl::Status CudaSubAllocatorBase::last_error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_error_;
}

int64_t CudaSubAllocatorBase::failed_frees() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failed_frees_;
}

bool CudaSubAllocatorBase::Succeeded(CUresult result,
                                     absl::FunctionRef<std::string()> call) {
  if (result == CUDA_SUCCESS) return true;
  absl::Status error = driver_->Check(result, call());
  std::lock_guard<std::mutex> lock(mutex_);
  last_error_ = std::move(error);
  return false;
}

bool CudaSubAllocatorBase::Entered(const CudaDeviceScope& scope) {
  if (scope.status().ok()) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  last_error_ = scope.status();
  return false;
}

void CudaSubAllocatorBase::ReportFailedFree(CUresult result,
                                            const std::string& call) {
  const absl::Status error = driver_->Check(result, call);
  std::fprintf(stderr, "tensormem: %s: %s\n", Name().c_str(),
               std::string(error.message()).c_str());
  std::lock_guard<std::mutex> lock(mutex_);
  ++failed_frees_;
  last_error_ = error;
}

}  // namespace tensormem
