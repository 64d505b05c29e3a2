// llama_logits: every position's logits of a token sequence, as llama.cpp
// computes them, for comparing tfmc with llama.cpp on the same GGUF file
// (docs/performance.md). The KV cache is f32 (its
// default f16 cache alone moves logits by about 1e-3), flash attention
// off, one thread.
//
//   llama_logits MODEL.gguf OUT.bin TOKEN...   (OUT: f32 [tokens, vocab])
//
// Built against llama.cpp's libllama (include/, build/bin):
//   c++ -O2 -std=c++17 llama_logits.cpp -I$LLAMA/include -I$LLAMA/ggml/include \
//       -L$LLAMA/build/bin -lllama -lggml -lggml-base -o llama_logits

#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s MODEL.gguf OUT.bin TOKEN...\n", argv[0]);
    return 2;
  }
  std::vector<llama_token> tokens;
  for (int i = 3; i < argc; ++i)
    tokens.push_back(llama_token(std::atoi(argv[i])));
  llama_backend_init();
  llama_model_params modelParams = llama_model_default_params();
  llama_model *model = llama_model_load_from_file(argv[1], modelParams);
  if (!model) {
    std::fprintf(stderr, "cannot load %s\n", argv[1]);
    return 1;
  }
  llama_context_params params = llama_context_default_params();
  params.n_ctx = 256;
  params.n_batch = params.n_ubatch = 256;
  params.n_threads = params.n_threads_batch = 1;
  params.type_k = params.type_v = GGML_TYPE_F32;
  params.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  llama_context *context = llama_init_from_model(model, params);
  if (!context) {
    std::fprintf(stderr, "cannot create a context\n");
    return 1;
  }
  llama_batch batch = llama_batch_init(int32_t(tokens.size()), 0, 1);
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = llama_pos(i);
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = 1;
  }
  batch.n_tokens = int32_t(tokens.size());
  if (llama_decode(context, batch) != 0) {
    std::fprintf(stderr, "llama_decode failed\n");
    return 1;
  }
  int32_t vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
  FILE *out = std::fopen(argv[2], "wb");
  for (size_t i = 0; i < tokens.size(); ++i)
    std::fwrite(llama_get_logits_ith(context, int32_t(i)), sizeof(float),
                size_t(vocab), out);
  std::fclose(out);
  llama_batch_free(batch);
  llama_free(context);
  llama_model_free(model);
  return 0;
}
