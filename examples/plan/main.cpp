// memopt-plan: the command line front door to memopt, one subcommand per
// family (see each command's header). Exit 0 on success; 1 on bad input or
// usage, with one line on stderr.

#include "caffe2.hpp"
#include "colocate.hpp"
#include "arena.hpp"
#include "command.hpp"
#include "compare.hpp"
#include "convert.hpp"
#include "generate.hpp"
#include "peak.hpp"
#include "report.hpp"
#include "rewrite.hpp"
#include "schedule.hpp"
#include "share.hpp"
#include "simulate.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>
#include <new>
#include <vector>

namespace {

int run(int argc, char** argv) {
  CLI::App app{"memopt-plan: plan the memory of a computation graph (memopt-graph/1 JSON or ONNX)"};
  app.require_subcommand(1);
  const std::vector<memopt::plan::command> commands = {
      memopt::plan::add_caffe2_command(app),
      memopt::plan::add_peak_command(app),
      memopt::plan::add_schedule_command(app),
      memopt::plan::add_colocate_command(app),
      memopt::plan::add_arena_command(app),
      memopt::plan::add_report_command(app),
      memopt::plan::add_share_command(app),
      memopt::plan::add_generate_command(app),
      memopt::plan::add_compare_command(app),
      memopt::plan::add_simulate_command(app),
      memopt::plan::add_rewrite_command(app),
      memopt::plan::add_convert_command(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "memopt-plan: " << e.what() << " (see memopt-plan --help)\n";
    return 1;
  }
  memopt::plan::stop_searches_on_interrupt();
  for (const auto& c : commands) {
    if (c.parser->parsed()) c.run();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const memopt::plan::cli_error& e) {
    std::cerr << "memopt-plan: " << e.what() << '\n';
  } catch (const std::bad_alloc&) {
    std::cerr << "memopt-plan: out of memory\n";
  } catch (const std::exception& e) {
    std::cerr << "memopt-plan: internal error: " << e.what() << '\n';
  } catch (...) {
    std::cerr << "memopt-plan: internal error\n";
  }
  return 1;
}
