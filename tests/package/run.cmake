# cmake -DMODE=add_subdirectory|find_package|fetch_content -DSOURCE_DIR=<memopt> -DSCRATCH=<dir> -P run.cmake
file(REMOVE_RECURSE ${SCRATCH})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "failed (${code}): ${ARGN}")
  endif()
endfunction()
# Runs a consumer program and fails unless it prints `expected`.
function(expect expected)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT code EQUAL 0 OR NOT out STREQUAL "${expected}\n")
    message(FATAL_ERROR "failed (${code}): ${ARGN}: expected \"${expected}\"")
  endif()
endfunction()

# docs/compare.md shows the consumer's priority as compare_main.cpp has it, between its markers.
include(${CMAKE_CURRENT_LIST_DIR}/../expect_quoted.cmake)
expect_quoted(${CMAKE_CURRENT_LIST_DIR}/consumer/compare_main.cpp compare.md ${SOURCE_DIR}/docs/compare.md)

set(chain ${SOURCE_DIR}/examples/data/small/chain.json)
set(chain_figures "consumer_io: chain peak 35 best 35 arena 35 shared 65")
set(compare_figures "consumer_compare: 12 columns, frees-most 8, bound 8")
set(consumer_args -DMEMOPT_MODE=${MODE} -DMEMOPT_SOURCE_DIR=${SOURCE_DIR})
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${SCRATCH}/memopt -DMEMOPT_BUILD_TESTS=OFF
      -DMEMOPT_BUILD_EXAMPLES=OFF -DMEMOPT_INSTALL=ON)
  run(${CMAKE_COMMAND} --install ${SCRATCH}/memopt --prefix ${SCRATCH}/prefix)
  list(APPEND consumer_args -DCMAKE_PREFIX_PATH=${SCRATCH}/prefix)
  # The core alone, as on a machine without nlohmann/json and zlib.
  run(${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/consumer -B ${SCRATCH}/core ${consumer_args}
      -DCONSUMER_IO=OFF -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON -DCMAKE_DISABLE_FIND_PACKAGE_ZLIB=ON)
  run(${CMAKE_COMMAND} --build ${SCRATCH}/core)
  expect("consumer: peak 35" ${SCRATCH}/core/consumer)
  expect("${compare_figures}" ${SCRATCH}/core/consumer_compare)
  # find_package(memopt COMPONENTS io).
  run(${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/consumer -B ${SCRATCH}/io ${consumer_args})
  run(${CMAKE_COMMAND} --build ${SCRATCH}/io --target consumer_io)
  expect("${chain_figures}" ${SCRATCH}/io/consumer_io ${chain})
  # The version file: a consumer asking for a later version than the installed one is refused.
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/consumer -B ${SCRATCH}/later
                          ${consumer_args} -DCONSUMER_VERSION=99.0 RESULT_VARIABLE code OUTPUT_QUIET ERROR_QUIET)
  if(code EQUAL 0)
    message(FATAL_ERROR "find_package(memopt 99.0) accepted the installed version")
  endif()
else()
  run(${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/consumer -B ${SCRATCH}/consumer ${consumer_args})
  run(${CMAKE_COMMAND} --build ${SCRATCH}/consumer)
  expect("consumer: peak 35" ${SCRATCH}/consumer/consumer)
  expect("${compare_figures}" ${SCRATCH}/consumer/consumer_compare)
  expect("${chain_figures}" ${SCRATCH}/consumer/consumer_io ${chain})
endif()
message("package.${MODE}: passed")
