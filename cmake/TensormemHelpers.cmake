include(GoogleTest)

# tensormem_library(NAME SOURCES ... DEPS ...): a static library of one layer, with the
# public headers under include/ visible to it and to everything that links it. A layer
# tensormem_<layer> is also tensormem::<layer>, the name the installed package gives it.
function(tensormem_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  string(REGEX REPLACE "^tensormem_" "" short_name ${name})
  set_target_properties(${name} PROPERTIES EXPORT_NAME ${short_name})
  add_library(tensormem::${short_name} ALIAS ${name})
  target_include_directories(${name}
      PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
             $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
      PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# tensormem_test(NAME SOURCES ... DEPS ...): a GoogleTest binary whose tests are each
# registered with CTest. TENSORMEM_TEST_DATA points at tests/data in the source tree,
# TENSORMEM_SHARED_DATA_DIR at the third-party data outside it (tests/shared_data.h).
function(tensormem_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  # GoogleTest's headers dominate a test file's compile time: read them once
  # per batch of files (TENSORMEM_UNITY_TESTS).
  set_target_properties(${name} PROPERTIES UNITY_BUILD ${TENSORMEM_UNITY_TESTS})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
      TENSORMEM_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data"
      TENSORMEM_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
      TENSORMEM_SHARED_DATA_DIR="${TENSORMEM_SHARED_DATA_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300 LABELS ${name})
endfunction()
