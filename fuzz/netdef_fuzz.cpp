// Caffe2 NetDef JSON → caffe2_like::parse_net and both memonger passes: a bad
// net is refused (net_error, a memopt::error) or left unchanged with a reason.
#include "fuzz_input.hpp"

#include <caffe2_like/memonger.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto net = caffe2_like::parse_net(memopt::fuzz::text_of(data, size));
    (void)caffe2_like::optimize_inference_net(net);
    (void)caffe2_like::optimize_dag_net(net);
  } catch (const memopt::error&) {
  }
  return 0;
}
