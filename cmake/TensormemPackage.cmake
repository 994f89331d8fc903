# Installing tensormem: the public headers, the layer libraries and the umbrella
# target tensormem::tensormem, the CLI, the PyTorch plug-in, a CMake package
# (find_package(tensormem CONFIG)) and tensormem.pc for pkg-config.
include(CMakePackageConfigHelpers)

set(tensormem_layers core alloc plan trace report)
if(TARGET tensormem_cuda)
  list(APPEND tensormem_layers cuda)
endif()
set(tensormem_layer_targets)
foreach(layer ${tensormem_layers})
  list(APPEND tensormem_layer_targets tensormem_${layer})
endforeach()

# tensormem::tensormem: every layer (the CLI target already owns the name `tensormem`).
add_library(tensormem_all INTERFACE)
set_target_properties(tensormem_all PROPERTIES EXPORT_NAME tensormem)
target_link_libraries(tensormem_all INTERFACE ${tensormem_layer_targets})
add_library(tensormem::tensormem ALIAS tensormem_all)

install(TARGETS ${tensormem_layer_targets} tensormem_all
        EXPORT tensormemTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/tensormem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/tensormem/core/version.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tensormem/core)
if(TARGET tensormem)
  install(TARGETS tensormem RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
foreach(plugin tensormem_torch tensormem_cuda_torch)
  if(TARGET ${plugin})
    install(TARGETS ${plugin} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
endforeach()

# The ONNX front end, when built, is tensormem::model: outside the umbrella target,
# so programs that do not read models need not find ONNX and protobuf.
set(TENSORMEM_PACKAGE_WITH_MODEL OFF)
if(TARGET tensormem_model)
  set(TENSORMEM_PACKAGE_WITH_MODEL ON)
  install(TARGETS tensormem_model
          EXPORT tensormemTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()

set(package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/tensormem)
install(EXPORT tensormemTargets NAMESPACE tensormem:: DESTINATION ${package_dir})
configure_package_config_file(cmake/tensormemConfig.cmake.in
    ${PROJECT_BINARY_DIR}/tensormemConfig.cmake INSTALL_DESTINATION ${package_dir})
# 0.x: a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tensormemConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tensormemConfig.cmake
              ${PROJECT_BINARY_DIR}/tensormemConfigVersion.cmake
        DESTINATION ${package_dir})

# tensormem.pc finds the prefix from its own place, so `cmake --install --prefix`
# anywhere gives a working file.
file(RELATIVE_PATH pc_prefix_from_pc_dir
     /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
set(pc_libs)
foreach(layer report trace alloc plan core)  # dependents first, for static linking
  string(APPEND pc_libs " -ltensormem_${layer}")
endforeach()
configure_file(cmake/tensormem.pc.in ${PROJECT_BINARY_DIR}/tensormem.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tensormem.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
