# cmake -DSOURCE=<python/memopt> -DDESTINATION=<build>/python/memopt -P sync_package.cmake
# Makes DESTINATION's files those of SOURCE (subpackages too): copies what
# changed, removes what SOURCE no longer has; leaves the extension and
# Python's byte-code caches alone.
cmake_minimum_required(VERSION 3.21)  # IN_LIST
file(GLOB_RECURSE sources RELATIVE ${SOURCE} ${SOURCE}/*)
list(FILTER sources EXCLUDE REGEX "(^|/)__pycache__/|\\.pyc$")
foreach(file IN LISTS sources)
  get_filename_component(folder ${DESTINATION}/${file} DIRECTORY)
  file(MAKE_DIRECTORY ${folder})
  file(COPY_FILE ${SOURCE}/${file} ${DESTINATION}/${file} ONLY_IF_DIFFERENT)
endforeach()
file(GLOB_RECURSE copies RELATIVE ${DESTINATION} ${DESTINATION}/*)
list(FILTER copies EXCLUDE REGEX "(^|/)__pycache__/|\\.pyc$|^_memopt[.].*(so|pyd)$")
foreach(file IN LISTS copies)
  if(NOT file IN_LIST sources)
    file(REMOVE ${DESTINATION}/${file})
  endif()
endforeach()
