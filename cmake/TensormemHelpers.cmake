include(GoogleTest)

# tensormem_library(NAME SOURCES ... DEPS ...): a static library of one layer, with the
# public headers under include/ visible to it and to everything that links it.
function(tensormem_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/include
                                            ${PROJECT_BINARY_DIR}/include
                                     PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# tensormem_test(NAME SOURCES ... DEPS ...): a GoogleTest binary whose tests are each
# registered with CTest. TENSORMEM_TEST_DATA points at tests/data in the source tree.
function(tensormem_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
      TENSORMEM_TEST_DATA="${PROJECT_SOURCE_DIR}/tests/data"
      TENSORMEM_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300 LABELS ${name})
endfunction()
