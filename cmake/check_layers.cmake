# The rule of what may depend on what (docs/design.md, "Parts"), checked on every source file:
#   cmake -DROOT=<source root> -P cmake/check_layers.cmake
# Each part may include headers of the parts listed for it and nothing else; SimGrid appears only in the
# engine's simgrid/ folder and the engine's .cpp files; no two headers share a file name. CTest runs it as
# kvtier_layers_test, so an include that runs back up the house fails the build's tests.
cmake_minimum_required(VERSION 3.25)

# part;allowed parts (a part is a folder; the longest matching folder names a file's part)
set(KVTIER_PARTS
  "sim/core|sim/core"
  "sim/workload|sim/core sim/workload"
  "sim/cache|sim/core sim/workload sim/cache"
  "sim/serving|sim/core sim/workload sim/cache sim/serving"
  "sim/cluster|sim/core sim/workload sim/cache sim/serving sim/cluster"
  "sim/engine|sim/core sim/workload sim/cache sim/serving sim/cluster sim/engine"
  "sim/engine/simgrid|sim/core sim/workload sim/cache sim/serving sim/cluster sim/engine sim/engine/simgrid"
  "sim/app|sim/core sim/workload sim/cache sim/app"
  "validate/compare|sim/core validate/compare"
  "sim/cli|sim/core sim/workload sim/cache sim/serving sim/cluster sim/engine sim/app sim/cli validate/compare"
  "validate|sim/core sim/workload sim/cache sim/serving sim/cluster sim/engine sim/engine/simgrid sim/app validate validate/compare"
  "hw/gpu|hw/gpu"
  "hw/kernels|sim/core hw/gpu hw/kernels"
  "hw/store|sim/core sim/workload sim/cache hw/gpu hw/kernels hw/store"
  "hw/model|sim/core hw/gpu hw/kernels hw/model"
  "hw/serve|sim/core sim/workload sim/cache sim/serving sim/cluster sim/engine hw/gpu hw/kernels hw/store hw/model hw/serve"
  "hw/tools|sim/core sim/workload sim/cache sim/serving sim/cluster sim/engine sim/app hw/gpu hw/kernels hw/store hw/model hw/serve hw/tools")

set(names "")
foreach(entry IN LISTS KVTIER_PARTS)
  string(REPLACE "|" ";" fields "${entry}")
  list(GET fields 0 name)
  list(APPEND names "${name}")
endforeach()

# The part a path belongs to: the longest part name that is a prefix folder of it.
function(part_of path out)
  set(best "")
  foreach(name IN LISTS names)
    string(LENGTH "${name}" length)
    string(LENGTH "${best}" best_length)
    if(path MATCHES "^${name}/" AND length GREATER best_length)
      set(best "${name}")
    endif()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

function(allowed_of part out)
  foreach(entry IN LISTS KVTIER_PARTS)
    string(REPLACE "|" ";" fields "${entry}")
    list(GET fields 0 name)
    if(name STREQUAL part)
      list(GET fields 1 allowed)
      string(REPLACE " " ";" allowed "${allowed}")
      set(${out} "${allowed}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

file(GLOB_RECURSE sources RELATIVE "${ROOT}" "${ROOT}/sim/*.h" "${ROOT}/sim/*.cpp" "${ROOT}/hw/*.h"
     "${ROOT}/hw/*.cpp" "${ROOT}/hw/*.cu" "${ROOT}/hw/*.cuh" "${ROOT}/validate/*.h" "${ROOT}/validate/*.cpp")
set(failures "")
set(header_names "")
foreach(source IN LISTS sources)
  part_of("${source}" part)
  if(part STREQUAL "")
    list(APPEND failures "${source}: in no part of the house")
    continue()
  endif()
  allowed_of("${part}" allowed)
  get_filename_component(name "${source}" NAME)
  if(source MATCHES "\\.(h|cuh)$")
    if(name IN_LIST header_names)
      list(APPEND failures "${source}: another header is also named ${name}")
    endif()
    list(APPEND header_names "${name}")
  endif()
  file(STRINGS "${ROOT}/${source}" includes REGEX "^#include [\"<]")
  foreach(line IN LISTS includes)
    if(line MATCHES "^#include <simgrid/")
      if(NOT (part STREQUAL "sim/engine/simgrid" OR (part STREQUAL "sim/engine" AND source MATCHES "\\.cpp$")))
        list(APPEND failures "${source}: includes SimGrid, which only sim/engine/simgrid/ and the engine's .cpp files may")
      endif()
    elseif(line MATCHES "^#include \"([^\"]+)\"")
      set(target "${CMAKE_MATCH_1}")
      if(NOT target MATCHES "/")
        list(APPEND failures "${source}: #include \"${target}\" is not rooted (write the path from the source root)")
        continue()
      endif()
      part_of("${target}" target_part)
      # The engine's .cpp files use its SimGrid internals; its headers, which the CLI sees, may not.
      if(part STREQUAL "sim/engine" AND source MATCHES "\\.cpp$" AND target_part STREQUAL "sim/engine/simgrid")
        continue()
      endif()
      if(target_part STREQUAL "" OR NOT target_part IN_LIST allowed)
        list(JOIN allowed ", " allowed_text)
        list(APPEND failures "${source}: ${part} may not include ${target} (it may include ${allowed_text})")
      endif()
    endif()
  endforeach()
endforeach()

if(failures)
  list(JOIN failures "\n" text)
  message(FATAL_ERROR "kvtier's layering rule is broken:\n${text}")
endif()
list(LENGTH sources count)
message(STATUS "kvtier layers: ${count} files follow the rule")
