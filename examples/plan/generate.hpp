#pragma once
// memopt-plan generate KIND --vertices N [--seed S] [--output FILE]
// Writes a generated graph (examples/generate/generators.hpp) in
// memopt-graph/1: KIND is layered, randwire, cnn-train or transformer-train;
// the same KIND, N and S give the same file on every machine.

#include "command.hpp"
#include "format.hpp"

#include <generate/generators.hpp>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>

namespace memopt::plan {

inline command add_generate_command(CLI::App& app) {
  struct options {
    std::string kind;
    std::size_t vertices = 1000;
    std::uint64_t seed = 0;
    std::string output;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("generate", "write a generated graph (memopt-graph/1), deterministic by seed");
  cmd->add_option("KIND", opts->kind, joined(graph_gen::kinds()))
      ->required()
      ->check(CLI::IsMember(graph_gen::kinds()));
  cmd->add_option("--vertices", opts->vertices, "about this many nodes (at most 100,000,000)")
      ->capture_default_str()
      ->check(whole_number(1, 100'000'000));
  cmd->add_option("--seed", opts->seed, "the random seed")->capture_default_str()->check(whole_number());
  cmd->add_option("--output", opts->output, "the file to write (default: standard output)");
  return {cmd, [opts] {
            const auto g = graph_gen::generate(opts->kind, opts->vertices, opts->seed);
            if (opts->output.empty()) {
              graph_gen::write_graph(std::cout, g);
              return;
            }
            std::ofstream file(opts->output, std::ios::binary);
            graph_gen::write_graph(file, g);
            if (!file) throw cli_error("cannot write " + opts->output);
          }};
}

}  // namespace memopt::plan
