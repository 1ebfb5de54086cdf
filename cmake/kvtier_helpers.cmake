# Test, benchmark and fuzz binaries link kvtier_app (sim/app): what they test reads built-in model cards,
# hardware files and scenarios by name.

# kvtier_test(NAME SOURCES... LIBS libs...): a GoogleTest binary registered with CTest.
# Tests run from the source root so that they find models/, configs/ and traces/, each test process with
# a temporary folder of its own (sim/app/test_main.cpp). A test that hangs fails after 300 s instead of
# holding the run (the slowest, under the sanitizers, take a few seconds).
function(kvtier_test name)
  if(NOT KVTIER_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} kvtier_app kvtier_test_main GTest::gtest)
  gtest_discover_tests(${name} WORKING_DIRECTORY ${KVTIER_SOURCE_DIR} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
endfunction()

# kvtier_benchmark(NAME SOURCES... LIBS libs...): a Google Benchmark binary (not run by CTest).
function(kvtier_benchmark name)
  if(NOT KVTIER_BENCHMARKS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} kvtier_app benchmark::benchmark benchmark::benchmark_main)
endfunction()

# kvtier_fuzz_target(NAME SOURCE LIB): a libFuzzer binary (only with -DKVTIER_FUZZ=ON and clang).
function(kvtier_fuzz_target name source lib)
  if(NOT KVTIER_FUZZ)
    return()
  endif()
  add_executable(${name} ${source})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${name} PRIVATE ${lib} kvtier_app)
endfunction()
