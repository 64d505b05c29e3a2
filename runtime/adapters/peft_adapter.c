/*===- peft_adapter.c - PEFT LoRA adapter folders ------------------------===*
 *
 * adapter_config.json and adapter_model.safetensors as PEFT saves them:
 * tensors base_model.model.<module>.lora_A.weight [r, in] and .lora_B.weight
 * [out, r], each B times scale · alpha / r (alpha / √r with use_rslora;
 * alpha_pattern's alpha where a key ends the module's name). The
 * compile-time merge (frontend/formats/LoraAdapter.cpp) reads the same
 * folders; what only a merge can do (modules_to_save, embeddings, DoRA,
 * biases, fan_in_fan_out) is refused here by name.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/adapters/lora_layout.h"
#include "runtime/core/status.h"
#include "runtime/grammar/json_value.h"
#include "runtime/support/read_file.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char kConfig[] = "adapter_config.json";
static const char kWeights[] = "adapter_model.safetensors";
static const char kWrapped[] = "base_model.model.";

/* What adapter_config.json says that the layout needs. */
typedef struct {
  double alpha;
  int rslora;
  const tfm_json *alpha_pattern; /* an object, or NULL */
} peft_config;

static int is_true(const tfm_json *value) {
  return value && value->kind == TFM_JSON_TRUE;
}

/* Reads and checks adapter_config.json into `config`, whose values point
 * into *json (the caller frees it). */
static tfm_status_code read_config(lora_layout *layout, tfm_json **json,
                                   peft_config *config) {
  char path[4096], error[256];
  snprintf(path, sizeof path, "%s/%s", layout->path, kConfig);
  size_t size;
  char *text = (char *)tfm_read_file(path, &size);
  if (!text)
    return tfm_fail(layout->status, TFM_ERROR_IO,
                    "tfm_lora_load: '%s' is not a PEFT adapter folder "
                    "(adapter_config.json and adapter_model.safetensors) or "
                    "a GGUF LoRA file: %s",
                    layout->path, strerror(errno));
  const tfm_json *c = *json = tfm_json_parse(text, error, sizeof error);
  free(text);
  if (!c || c->kind != TFM_JSON_OBJECT)
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kConfig,
                         c ? "not a JSON object" : error);
  const tfm_json *type = tfm_json_get(c, "peft_type");
  if (type && (type->kind != TFM_JSON_STRING || strcmp(type->text, "LORA")))
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kConfig,
                         "peft_type is not LORA (only LoRA adapters are "
                         "applied)");
  if (is_true(tfm_json_get(c, "use_dora")))
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kConfig,
                         "use_dora: DoRA's magnitude vectors are not applied "
                         "at run time");
  const tfm_json *bias = tfm_json_get(c, "bias");
  if (bias && bias->kind == TFM_JSON_STRING && strcmp(bias->text, "none"))
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kConfig,
                         "trained biases (bias other than 'none') are not "
                         "applied at run time");
  const tfm_json *saved = tfm_json_get(c, "modules_to_save");
  if (saved && saved->kind == TFM_JSON_ARRAY && saved->count > 0)
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kConfig,
                         "modules_to_save replaces base weights, which "
                         "run-time adapters leave shared: merge this adapter "
                         "at compile time (tfmc --lora)");
  if (is_true(tfm_json_get(c, "fan_in_fan_out")))
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kConfig,
                         "fan_in_fan_out (GPT-2's Conv1D weights) is not "
                         "applied at run time: merge this adapter at compile "
                         "time (tfmc --lora)");
  const tfm_json *alpha = tfm_json_get(c, "lora_alpha");
  config->alpha = alpha && alpha->kind == TFM_JSON_NUMBER ? alpha->number : 8.0;
  config->rslora = is_true(tfm_json_get(c, "use_rslora"));
  const tfm_json *pattern = tfm_json_get(c, "alpha_pattern");
  if (pattern && pattern->kind == TFM_JSON_OBJECT) {
    for (size_t i = 0; i < pattern->count; ++i)
      if (pattern->items[i].kind != TFM_JSON_NUMBER)
        return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kConfig,
                             "alpha_pattern's values must be numbers");
    config->alpha_pattern = pattern;
  }
  return TFM_OK;
}

/* The alpha of `module`: alpha_pattern's first key that ends it at a dot
 * (PEFT's match of `(.*\.)?key$`), else lora_alpha. */
static double alpha_of(const peft_config *config, const char *module) {
  const tfm_json *pattern = config->alpha_pattern;
  for (size_t i = 0; pattern && i < pattern->count; ++i) {
    char expression[512];
    snprintf(expression, sizeof expression, "^(.*\\.)?%s$", pattern->keys[i]);
    regex_t compiled;
    if (regcomp(&compiled, expression, REG_EXTENDED | REG_NOSUB))
      continue;
    int matched = regexec(&compiled, module, 0, NULL, 0) == 0;
    regfree(&compiled);
    if (matched)
      return pattern->items[i].number;
  }
  return config->alpha;
}

/* One of the file's tensors (`name`, described by `info`) into the slot. */
static tfm_status_code place_tensor(lora_layout *layout,
                                    const peft_config *config, const char *name,
                                    const tfm_json *info, const uint8_t *data,
                                    size_t data_size) {
  char what[1024];
  size_t wrapped = sizeof kWrapped - 1;
  if (strncmp(name, kWrapped, wrapped)) {
    snprintf(what, sizeof what,
             "tensor '%s' is not under '%s' (the names PEFT saves an "
             "adapter's tensors under)",
             name, kWrapped);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kWeights, what);
  }
  const char *module_start = name + wrapped;
  size_t length = strlen(module_start);
  int is_a =
      length > 14 && !strcmp(module_start + length - 14, ".lora_A.weight");
  int is_b =
      length > 14 && !strcmp(module_start + length - 14, ".lora_B.weight");
  if (!is_a && !is_b) {
    snprintf(what, sizeof what,
             "'%s' is not a LoRA A or B matrix of a projection (LoRA on "
             "embeddings and saved modules are merged at compile time: "
             "tfmc --lora)",
             name);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kWeights, what);
  }
  char module[768], weight[800];
  snprintf(module, sizeof module, "%.*s", (int)(length - 14), module_start);
  snprintf(weight, sizeof weight, "%s.weight", module);
  const tfm_json *dtype = tfm_json_get(info, "dtype");
  const tfm_json *shape = tfm_json_get(info, "shape");
  const tfm_json *offsets = tfm_json_get(info, "data_offsets");
  lora_matrix m = {0};
  if (dtype && dtype->kind == TFM_JSON_STRING) {
    m.bytes = !strcmp(dtype->text, "F32")                                   ? 4
              : !strcmp(dtype->text, "F16") || !strcmp(dtype->text, "BF16") ? 2
                                                                            : 0;
    m.bf16 = !strcmp(dtype->text, "BF16");
  }
  if (!m.bytes || !shape || shape->kind != TFM_JSON_ARRAY ||
      shape->count != 2 || !offsets || offsets->kind != TFM_JSON_ARRAY ||
      offsets->count != 2) {
    snprintf(what, sizeof what,
             "'%s' is not a 2-D F32, F16 or BF16 tensor with data_offsets",
             name);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kWeights, what);
  }
  /* Sizes as JSON numbers: whole, and small enough to multiply exactly. */
  double rows = shape->items[0].number, cols = shape->items[1].number;
  if (!(rows >= 1 && rows <= 16777216 && cols >= 1 && cols <= 16777216) ||
      rows != floor(rows) || cols != floor(cols)) {
    snprintf(what, sizeof what, "'%s' has a shape of no matrix", name);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kWeights, what);
  }
  m.rows = (int64_t)rows;
  m.cols = (int64_t)cols;
  double begin = offsets->items[0].number, end = offsets->items[1].number;
  if (begin < 0 || end > (double)data_size || begin != floor(begin) ||
      end - begin != (double)m.rows * (double)m.cols * m.bytes) {
    snprintf(what, sizeof what,
             "'%s' [%lld, %lld] does not fit its data_offsets within the "
             "file (truncated?)",
             name, (long long)m.rows, (long long)m.cols);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kWeights, what);
  }
  m.data = data + (size_t)begin;
  double r = (double)m.cols; /* B's: [out, r] */
  double factor =
      layout->scale * alpha_of(config, module) / (config->rslora ? sqrt(r) : r);
  return tfm_lora_place(layout, kWeights, name, weight, is_a, &m, factor);
}

/* adapter_model.safetensors, held whole in *file (the caller frees it):
 * every tensor placed, then the pairs checked. */
static tfm_status_code read_weights(lora_layout *layout,
                                    const peft_config *config, uint8_t **file) {
  char path[4096], error[256];
  snprintf(path, sizeof path, "%s/%s", layout->path, kWeights);
  size_t size;
  uint8_t *bytes = *file = tfm_read_file(path, &size);
  if (!bytes)
    return tfm_lora_fail(layout, TFM_ERROR_IO, kWeights, strerror(errno));
  uint64_t header_size = 0;
  if (size >= 8)
    for (int i = 7; i >= 0; --i)
      header_size = header_size << 8 | bytes[i];
  if (size < 8 || header_size > size - 8)
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kWeights,
                         "not a safetensors file (its header runs past the "
                         "end)");
  char *text = malloc(header_size + 1);
  if (!text)
    return tfm_lora_fail(layout, TFM_ERROR_OUT_OF_MEMORY, kWeights,
                         "out of memory");
  memcpy(text, bytes + 8, header_size);
  text[header_size] = '\0';
  tfm_json *header = tfm_json_parse(text, error, sizeof error);
  free(text);
  tfm_status_code code = TFM_OK;
  if (!header || header->kind != TFM_JSON_OBJECT)
    code = tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, kWeights,
                         header ? "its header is not a JSON object" : error);
  for (size_t i = 0; code == TFM_OK && i < header->count; ++i)
    if (strcmp(header->keys[i], "__metadata__"))
      code = place_tensor(layout, config, header->keys[i], &header->items[i],
                          bytes + 8 + header_size, size - 8 - header_size);
  tfm_json_free(header);
  return code == TFM_OK ? tfm_lora_check_pairs(layout, kWeights) : code;
}

tfm_status_code tfm_lora_read_peft(lora_layout *layout) {
  tfm_json *json = NULL;
  peft_config config = {0};
  uint8_t *file = NULL;
  tfm_status_code code = read_config(layout, &json, &config);
  if (code == TFM_OK)
    code = read_weights(layout, &config, &file);
  free(file);
  tfm_json_free(json);
  return code;
}
