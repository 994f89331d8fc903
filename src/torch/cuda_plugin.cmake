# libtensormem_cuda_torch.so: tensormem's allocators behind PyTorch's
# CUDAPluggableAllocator. Needs the CUDA toolkit's headers only (no torch, no
# driver at link time), so it is built wherever tensormem_cuda is.
if(NOT TENSORMEM_CUDA_FOUND)
  return()
endif()
tensormem_library(tensormem_cuda_torch_plugin
  SOURCES cuda_plugin.cc
  DEPS tensormem_plugin_options tensormem_cuda tensormem_trace tensormem_alloc
       tensormem_core nlohmann_json::nlohmann_json)
add_library(tensormem_cuda_torch SHARED cuda_c_api.cc)
target_include_directories(tensormem_cuda_torch PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(tensormem_cuda_torch PRIVATE tensormem_cuda_torch_plugin)
set_target_properties(tensormem_cuda_torch PROPERTIES
  LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/python/tensormem
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON)
