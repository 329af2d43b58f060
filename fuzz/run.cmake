# ctest's libFuzzer runs (the ordinary build compiles with g++, libFuzzer
# needs clang++): cmake -DMODE=build -DSOURCE_DIR=... -DSCRATCH=... -P run.cmake
# configures and builds the fuzz targets with clang++ under SCRATCH;
# cmake -DMODE=run -DSCRATCH=... -DTARGET=name -DSECONDS=n -DSEEDS="dir;..." -P run.cmake
# runs one for SECONDS on a fresh corpus grown from SEEDS and fails on any finding
# (libFuzzer then writes the input as SCRATCH/crash-*: add it to fuzz/regressions/<name>/).
if(MODE STREQUAL "build")
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${SCRATCH} -DCMAKE_CXX_COMPILER=${CLANGXX}
                          -DMEMOPT_FUZZ=ON -DMEMOPT_BUILD_TESTS=OFF -DMEMOPT_INSTALL=OFF
                  RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "configuring the fuzz targets with ${CLANGXX} failed")
  endif()
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${SCRATCH} -j2 --target ${TARGETS} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "building the fuzz targets failed")
  endif()
elseif(MODE STREQUAL "run")
  set(corpus ${SCRATCH}/corpus/${TARGET})
  file(REMOVE_RECURSE ${corpus})
  file(MAKE_DIRECTORY ${corpus})
  execute_process(COMMAND ${SCRATCH}/fuzz/${TARGET} -max_total_time=${SECONDS} -rss_limit_mb=4096 -timeout=20
                          -print_final_stats=1 ${corpus} ${SEEDS}
                  WORKING_DIRECTORY ${SCRATCH} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" runs "${out}")
  string(REGEX MATCH "cov: [0-9]+ ft: [0-9]+" coverage "${out}")
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${TARGET} found a failing input (saved in ${SCRATCH}):\n${out}")
  endif()
  message(STATUS "${TARGET}: ${runs}, ${coverage}, no finding in ${SECONDS} s")
else()
  message(FATAL_ERROR "MODE must be build or run")
endif()
