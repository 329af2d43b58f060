# Builds TARGET in BUILD_DIR and passes only when the build fails and the first
# constraint the compiler reports unmet matches CONCEPT (a regex): the error a
# user sees first names what their type lacks.
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET}
                RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(status EQUAL 0)
  message(FATAL_ERROR "${TARGET} compiled; it must not")
endif()
# g++: "required for the satisfaction of 'C<...>'"; clang++: "because 'T' does not satisfy 'C'"
# or "because 'C<...>' evaluated to false".
string(REGEX MATCH "[^\n]*(required for the satisfaction of|does not satisfy|evaluated to false)[^\n]*" first
       "${output}")
if(first STREQUAL "")
  message(FATAL_ERROR "${TARGET} failed without naming an unmet constraint:\n${output}")
endif()
if(NOT first MATCHES "${CONCEPT}")
  message(FATAL_ERROR "${TARGET}: the first unmet constraint is not ${CONCEPT}: ${first}")
endif()
message(STATUS "${TARGET}: ${first}")
