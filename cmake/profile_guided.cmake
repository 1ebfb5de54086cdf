# Profile-guided optimisation, for users who run many simulations (sweeps, plans) and can spare a second
# build: KVTIER_PROFILE=generate instruments the build so that every kvtier process, simulation children
# included, writes how often each branch and call ran into <build>/profile; KVTIER_PROFILE=use rebuilds
# the same build folder with that profile. Files the runs never reached are optimised as without one.
# docs/testing.md gives the steps and what it gains.
set(KVTIER_PROFILE "off" CACHE STRING "Profile-guided optimisation: generate, use or off")
set_property(CACHE KVTIER_PROFILE PROPERTY STRINGS generate use off)

if(NOT KVTIER_PROFILE STREQUAL "off")
  if(NOT KVTIER_PROFILE MATCHES "^(generate|use)$")
    message(FATAL_ERROR "KVTIER_PROFILE must be generate, use or off, not '${KVTIER_PROFILE}'")
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU" OR KVTIER_SANITIZE OR KVTIER_FUZZ)
    message(FATAL_ERROR "KVTIER_PROFILE needs GCC and a build without sanitizers or fuzzing")
  endif()
  # The profile's files are named after the objects' paths, so both steps must use one build folder.
  set(kvtier_profile_dir "${CMAKE_BINARY_DIR}/profile")
  if(KVTIER_PROFILE STREQUAL "generate")
    # One thread updates the counters: the simulation runs in processes, never in threads.
    add_compile_options(-fprofile-generate=${kvtier_profile_dir} -fprofile-update=single)
    add_link_options(-fprofile-generate=${kvtier_profile_dir})
    # Simulation children end with _exit, which skips the profile's writing (isolated_run.cpp).
    add_compile_definitions(KVTIER_PROFILE_GENERATE)
  else()
    if(NOT EXISTS "${kvtier_profile_dir}")
      message(FATAL_ERROR "KVTIER_PROFILE=use: no profile in ${kvtier_profile_dir}; build with "
                          "KVTIER_PROFILE=generate and run kvtier first")
    endif()
    # Tests and benchmarks never ran in the profile (-Wmissing-profile); a source edited since the profile
    # was taken is compiled without it for the functions that changed (-Wcoverage-mismatch).
    add_compile_options(-fprofile-use=${kvtier_profile_dir} -fprofile-partial-training -Wno-missing-profile
                        -Wno-coverage-mismatch)
  endif()
endif()
