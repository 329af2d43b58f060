# Fails unless a page shows, as a ```cpp block, a source file's lines between its two
# `// [mark]` lines exactly as they are: what a page quotes from a file the tests build stays true.
#   cmake -DSOURCE=<file> -DMARK=<mark> -DDOC=<page> -P expect_quoted.cmake
# or include() this file and call expect_quoted(<file> <mark> <page>).
function(expect_quoted source mark doc)
  file(READ ${source} text)
  string(REGEX MATCH "// \\[${mark}\\]\n(.*)// \\[${mark}\\]" shown "${text}")
  file(READ ${doc} page)
  string(FIND "${page}" "```cpp\n${CMAKE_MATCH_1}```" at)
  if(shown STREQUAL "" OR at EQUAL -1)
    message(FATAL_ERROR "${doc} does not show ${source} between its // [${mark}] lines as it is")
  endif()
endfunction()

if(DEFINED SOURCE)
  expect_quoted(${SOURCE} ${MARK} ${DOC})
endif()
