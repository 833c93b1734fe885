// tools/bench/response-usage-parse.cpp — reading a whole (not streamed) model
// response for its usage: nlohmann's DOM parse, as gateway/metering/
// usage_meter.cpp does today, against simdjson's on-demand API reading only
// `model` and `usage`. The candidate for the metered path's next lever
// (docs/benchmarks.md); not linked into corral. 200 000 reads of each body.
#include <simdjson.h>
#include <nlohmann/json.hpp>
#include <chrono>
#include <cstdio>
#include <string>
using json = nlohmann::json;
int main() {
  std::string small = R"({"id":"msg_bench","type":"message","role":"assistant","model":"claude-bench-1","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":3}})";
  std::string big = R"({"id":"msg_bench","type":"message","role":"assistant","model":"claude-bench-1","content":[{"type":"text","text":")" + std::string(2000,'a') + R"("},{"type":"tool_use","id":"t1","name":"bash","input":{"command":"ls -la /workspace","timeout":30}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":3,"cache_read_input_tokens":0}})";
  simdjson::ondemand::parser parser;
  for (auto* b : {&small, &big}) {
    simdjson::padded_string padded(*b);
    for (int mode = 0; mode < 2; ++mode) {
      const int N = 200000; unsigned long long sum = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < N; ++i) {
        if (mode == 0) {
          json d = json::parse(*b, nullptr, false);
          sum += d["usage"]["output_tokens"].get<unsigned long long>() + d["model"].get_ref<const std::string&>().size();
        } else {
          auto doc = parser.iterate(padded);
          simdjson::ondemand::object o = doc.get_object();
          for (auto field : o) {
            std::string_view k = field.unescaped_key();
            if (k == "model") sum += std::string_view(field.value().get_string()).size();
            else if (k == "usage") { for (auto u : field.value().get_object()) { if (u.unescaped_key().value() == "output_tokens") sum += uint64_t(u.value().get_uint64()); } }
          }
        }
      }
      double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / N;
      std::printf("%s %-10s %.2f us (%llu)\n", b == &small ? "small(220B)" : "big(2.3KiB)", mode ? "simdjson" : "nlohmann", us, sum / N);
    }
  }
}
