#pragma once
// Umbrella for compare/: algorithms side by side, as data. A cell is one
// algorithm's result on one graph with its family's bound there
// (compare/cell.hpp); schedule_cells, arena_cells and share_cells fill them
// with the library's algorithms, a user's own scheduler beside them
// (compare/families.hpp); summarise gives each algorithm's geometric mean of
// ratios, wins and seconds; print_markdown and print_csv write them
// (compare/print.hpp). JSON: memopt::io's io/compare_json.hpp.
#include <memopt/compare/cell.hpp>
#include <memopt/compare/families.hpp>
#include <memopt/compare/print.hpp>
