# cmake -DMODE=add_subdirectory|find_package -DSOURCE_DIR=<memopt> -DSCRATCH=<dir> -P run.cmake
file(REMOVE_RECURSE ${SCRATCH})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "failed (${code}): ${ARGN}")
  endif()
endfunction()

set(consumer_args -DMEMOPT_MODE=${MODE} -DMEMOPT_SOURCE_DIR=${SOURCE_DIR})
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${SCRATCH}/memopt -DMEMOPT_BUILD_TESTS=OFF
      -DMEMOPT_BUILD_EXAMPLES=OFF -DMEMOPT_INSTALL=ON)
  run(${CMAKE_COMMAND} --install ${SCRATCH}/memopt --prefix ${SCRATCH}/prefix)
  list(APPEND consumer_args -DCMAKE_PREFIX_PATH=${SCRATCH}/prefix)
endif()
run(${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/consumer -B ${SCRATCH}/consumer ${consumer_args})
run(${CMAKE_COMMAND} --build ${SCRATCH}/consumer)
run(${SCRATCH}/consumer/consumer)
