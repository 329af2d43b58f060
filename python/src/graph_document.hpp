#pragma once
// memopt.Graph's state: a memopt-graph/1 document (built node by node from
// Python, read from a file or made by a rewrite) and the file_graph memopt's
// algorithms run on, built from it when first needed (one per memory model:
// with storage aliases or every output apart) and kept until it changes.

#include "errors.hpp"

#include <memopt/io/graph_file.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <memory>
#include <string>
#include <utility>

namespace memopt::python {

class graph_document {
 public:
  /// An empty graph called `name`.
  explicit graph_document(const std::string& name)
      : graph_document(nlohmann::ordered_json{{"format", "memopt-graph/1"}, {"name", name}}, "") {}

  /// `doc` as it is (checked when the graph is first built); `label` names it
  /// in error messages (its file), else its name does, else "graph".
  graph_document(nlohmann::ordered_json doc, std::string label) : doc_(std::move(doc)), label_(std::move(label)) {
    if (!doc_.is_object()) return;  // the reader says what is wrong
    for (const char* key : {"name", "source"}) {
      if (!doc_.contains(key)) doc_[key] = "";
    }
    for (const char* key : {"nodes", "outputs"}) {
      if (!doc_.contains(key)) doc_[key] = nlohmann::ordered_json::array();
    }
    if (label_.empty()) {
      const auto& name = doc_["name"];
      label_ = name.is_string() && !name.get_ref<const std::string&>().empty() ? name.get<std::string>() : "graph";
    }
  }

  [[nodiscard]] const nlohmann::ordered_json& document() const { return doc_; }
  [[nodiscard]] const std::string& label() const { return label_; }

  /// The document, to change: every graph built from it is dropped.
  nlohmann::ordered_json& edit() {
    built_ = {};
    return doc_;
  }

  /// The graph of the document, in the memory model with storage aliases or
  /// without, with in-place reuse or without; a fault of the document is a FormatError naming the label.
  [[nodiscard]] std::shared_ptr<const io::file_graph> graph(bool storage_aliases, bool in_place_reuse = false) {
    auto& built = built_[(storage_aliases ? 1 : 0) + (in_place_reuse ? 2 : 0)];
    if (!built) {
      try {
        // new, not make_shared: adjacency_list has no move constructor, and new elides the copy.
        built.reset(new io::file_graph(io::graph_from_json(
            doc_, {.storage_aliases = storage_aliases, .in_place_reuse = in_place_reuse})));
      } catch (const io::format_error& e) {
        throw python_error(error_kind::format, label_ + ": " + e.what());
      }
    }
    return built;
  }

 private:
  nlohmann::ordered_json doc_;
  std::string label_;
  std::array<std::shared_ptr<const io::file_graph>, 4> built_{};
};

}  // namespace memopt::python
