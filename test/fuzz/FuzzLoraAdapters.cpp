//===- FuzzLoraAdapters.cpp - run-time LoRA adapters' files ---------------===//
//
// What tfm_lora_load reads (runtime/adapters/): a PEFT folder's
// adapter_config.json and adapter_model.safetensors, and a GGUF LoRA file,
// laid out in a slot of a bank whose targets are stories260K's projections
// under both namings (Hugging Face's and llama.cpp's), rank 8. The input's
// parts: the config, the safetensors file, the GGUF file. A refusal must
// say what is wrong.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzFiles.h"

extern "C" {
#include "runtime/adapters/lora_layout.h"
}

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

/// stories260K's projections (width 64, 4 KV heads of 8, MLP 172) in its
/// 5 layers, by both names, sorted as tfm-lora-slots sorts its table.
const tfm_lora_desc &bankDesc() {
  static std::vector<std::string> names;
  static std::vector<tfm_lora_target> targets;
  static tfm_lora_desc desc = [] {
    struct Module {
      const char *hf, *gguf;
      int64_t in, out;
    } modules[] = {{"self_attn.q_proj", "attn_q", 64, 64},
                   {"self_attn.k_proj", "attn_k", 64, 32},
                   {"self_attn.v_proj", "attn_v", 64, 32},
                   {"self_attn.o_proj", "attn_output", 64, 64},
                   {"mlp.gate_proj", "ffn_gate", 64, 172},
                   {"mlp.up_proj", "ffn_up", 64, 172},
                   {"mlp.down_proj", "ffn_down", 172, 64}};
    std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> rows;
    for (int layer = 0; layer < 5; ++layer)
      for (const Module &m : modules) {
        std::string l = std::to_string(layer);
        rows.push_back(
            {"model.layers." + l + "." + m.hf + ".weight", {m.in, m.out}});
        rows.push_back({"blk." + l + "." + m.gguf + ".weight", {m.in, m.out}});
      }
    std::sort(rows.begin(), rows.end());
    names.reserve(rows.size());
    for (const auto &[name, features] : rows) {
      names.push_back(name);
      targets.push_back(
          {names.back().c_str(), features.first, features.second});
    }
    return tfm_lora_desc{2, 8, int32_t(targets.size()), targets.data()};
  }();
  return desc;
}

/// Reads one adapter with `read` into a fresh slot; aborts on a refusal
/// without a message.
void readInto(tfm_lora_bank *bank, const std::string &path,
              tfm_status_code (*read)(lora_layout *)) {
  const tfm_lora_desc &desc = bankDesc();
  std::vector<float> slot(size_t(tfm_lora_slot_floats(bank)));
  std::vector<int32_t> ranksA(size_t(desc.num_targets)),
      ranksB(size_t(desc.num_targets));
  tfm_status status{};
  lora_layout layout = {path.c_str(), bank,          1.0f,         &status,
                        slot.data(),  ranksA.data(), ranksB.data()};
  if (read(&layout) != TFM_OK && !status.message[0])
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string_view> parts = tfm_fuzz::splitParts(data, size, 3);
  static tfm_lora_bank *bank = [] {
    int failed = 0;
    return tfm_lora_bank_new(&bankDesc(), &failed);
  }();
  std::string folder = tfm_fuzz::scratchDirectory() + "/adapter";
  mkdir(folder.c_str(), 0700);
  tfm_fuzz::writePath(folder + "/adapter_config.json", parts[0]);
  tfm_fuzz::writePath(folder + "/adapter_model.safetensors", parts[1]);
  readInto(bank, folder, tfm_lora_read_peft);
  readInto(bank, tfm_fuzz::writeFile("adapter.gguf", parts[2]),
           tfm_lora_read_gguf);
  return 0;
}
