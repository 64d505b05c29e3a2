/*===- lora_load.c - PEFT LoRA adapter folders into a model's slots ------===*
 *
 * tfm_lora_load: reads adapter_config.json and adapter_model.safetensors as
 * PEFT saves them and lays each adapted module's A [r, in] and B [out, r]
 * out in a slot (runtime/core/lora_bank.h): A in the first r of the slot's
 * rank rows, B's columns likewise, times scale · alpha / r (alpha / √r
 * with use_rslora; alpha_pattern's alpha where a key ends the module's
 * name). The compile-time merge (frontend/formats/LoraAdapter.cpp) reads
 * the same folders; what only a merge can do (modules_to_save, embeddings,
 * DoRA, biases, fan_in_fan_out) is refused here by name.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/lora_bank.h"
#include "runtime/core/status.h"
#include "runtime/grammar/json_value.h"
#include "runtime/support/read_file.h"
#include "tfm/half_floats.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char kWrapped[] = "base_model.model.";

/* What adapter_config.json says that the layout needs. */
typedef struct {
  double alpha;
  int rslora;
  const tfm_json *alpha_pattern; /* an object, or NULL */
} lora_config;

/* Everything one load works with; `status` gets the first failure. */
typedef struct {
  const char *directory;
  const tfm_lora_bank *bank;
  float scale;
  tfm_status *status;
  tfm_json *config_json;
  lora_config config;
  uint8_t *file;
  size_t file_size;
  tfm_json *header;
  float *slot;
  int32_t *ranks_a, *ranks_b; /* each target's r as A and B gave it; 0 */
} lora_load;

static tfm_status_code fail(lora_load *load, tfm_status_code code,
                            const char *file, const char *what) {
  return tfm_fail(load->status, code, "tfm_lora_load: %s/%s: %s",
                  load->directory, file, what);
}

static int is_true(const tfm_json *value) {
  return value && value->kind == TFM_JSON_TRUE;
}

static tfm_status_code read_config(lora_load *load) {
  static const char kFile[] = "adapter_config.json";
  char path[4096], error[256];
  snprintf(path, sizeof path, "%s/%s", load->directory, kFile);
  size_t size;
  char *text = (char *)tfm_read_file(path, &size);
  if (!text)
    return tfm_fail(load->status, TFM_ERROR_IO,
                    "tfm_lora_load: '%s' is not a PEFT adapter folder "
                    "(adapter_config.json and adapter_model.safetensors): "
                    "%s",
                    load->directory, strerror(errno));
  load->config_json = tfm_json_parse(text, error, sizeof error);
  free(text);
  const tfm_json *c = load->config_json;
  if (!c || c->kind != TFM_JSON_OBJECT)
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile,
                c ? "not a JSON object" : error);
  const tfm_json *type = tfm_json_get(c, "peft_type");
  if (type && (type->kind != TFM_JSON_STRING || strcmp(type->text, "LORA")))
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile,
                "peft_type is not LORA (only LoRA adapters are applied)");
  if (is_true(tfm_json_get(c, "use_dora")))
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile,
                "use_dora: DoRA's magnitude vectors are not applied at run "
                "time");
  const tfm_json *bias = tfm_json_get(c, "bias");
  if (bias && bias->kind == TFM_JSON_STRING && strcmp(bias->text, "none"))
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile,
                "trained biases (bias other than 'none') are not applied "
                "at run time");
  const tfm_json *saved = tfm_json_get(c, "modules_to_save");
  if (saved && saved->kind == TFM_JSON_ARRAY && saved->count > 0)
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile,
                "modules_to_save replaces base weights, which run-time "
                "adapters leave shared: merge this adapter at compile time "
                "(tfmc --lora)");
  if (is_true(tfm_json_get(c, "fan_in_fan_out")))
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile,
                "fan_in_fan_out (GPT-2's Conv1D weights) is not applied at "
                "run time: merge this adapter at compile time (tfmc --lora)");
  const tfm_json *alpha = tfm_json_get(c, "lora_alpha");
  load->config.alpha =
      alpha && alpha->kind == TFM_JSON_NUMBER ? alpha->number : 8.0;
  load->config.rslora = is_true(tfm_json_get(c, "use_rslora"));
  const tfm_json *pattern = tfm_json_get(c, "alpha_pattern");
  if (pattern && pattern->kind == TFM_JSON_OBJECT) {
    for (size_t i = 0; i < pattern->count; ++i)
      if (pattern->items[i].kind != TFM_JSON_NUMBER)
        return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile,
                    "alpha_pattern's values must be numbers");
    load->config.alpha_pattern = pattern;
  }
  return TFM_OK;
}

/* The alpha of `module`: alpha_pattern's first key that ends it at a dot
 * (PEFT's match of `(.*\.)?key$`), else lora_alpha. */
static double alpha_of(const lora_config *config, const char *module) {
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

/* Target `weight`'s index (the table is sorted by name), or -1. */
static int32_t find_target(const tfm_lora_desc *desc, const char *weight) {
  int32_t low = 0, high = desc->num_targets - 1;
  while (low <= high) {
    int32_t middle = low + (high - low) / 2;
    int order = strcmp(desc->targets[middle].weight, weight);
    if (order == 0)
      return middle;
    if (order < 0)
      low = middle + 1;
    else
      high = middle - 1;
  }
  return -1;
}

/* One tensor's values as f32, from the file's data at `offset`. */
static float value_at(const uint8_t *data, int bytes, int bf16, int64_t index) {
  if (bytes == 4) {
    float v;
    memcpy(&v, data + 4 * index, 4);
    return v;
  }
  uint16_t half;
  memcpy(&half, data + 2 * index, 2);
  return bf16 ? tfm_bf16_to_float(half) : tfm_f16_to_float(half);
}

/* Places one of the file's tensors (`name`, described by `info`) in the
 * slot. */
static tfm_status_code place_tensor(lora_load *load, const char *name,
                                    const tfm_json *info,
                                    const uint8_t *data_start,
                                    size_t data_size) {
  static const char kFile[] = "adapter_model.safetensors";
  char what[1024];
  size_t wrapped = sizeof kWrapped - 1;
  if (strncmp(name, kWrapped, wrapped)) {
    snprintf(what, sizeof what,
             "tensor '%s' is not under '%s' (the names PEFT saves an "
             "adapter's tensors under)",
             name, kWrapped);
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile, what);
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
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile, what);
  }
  char module[768], weight[800];
  snprintf(module, sizeof module, "%.*s", (int)(length - 14), module_start);
  snprintf(weight, sizeof weight, "%s.weight", module);
  const tfm_lora_desc *desc = tfm_lora_bank_desc(load->bank);
  int32_t target = find_target(desc, weight);
  if (target < 0) {
    snprintf(what, sizeof what,
             "the adapter adapts '%s', which this model was not compiled to "
             "adapt (tfmc --lora-targets), or does not have",
             module);
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile, what);
  }
  const tfm_json *dtype = tfm_json_get(info, "dtype");
  const tfm_json *shape = tfm_json_get(info, "shape");
  const tfm_json *offsets = tfm_json_get(info, "data_offsets");
  int bytes = 0, bf16 = 0;
  if (dtype && dtype->kind == TFM_JSON_STRING) {
    bytes = !strcmp(dtype->text, "F32")                                   ? 4
            : !strcmp(dtype->text, "F16") || !strcmp(dtype->text, "BF16") ? 2
                                                                          : 0;
    bf16 = !strcmp(dtype->text, "BF16");
  }
  if (!bytes || !shape || shape->kind != TFM_JSON_ARRAY || shape->count != 2 ||
      !offsets || offsets->kind != TFM_JSON_ARRAY || offsets->count != 2) {
    snprintf(what, sizeof what,
             "'%s' is not a 2-D F32, F16 or BF16 tensor with data_offsets",
             name);
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile, what);
  }
  int64_t rows = (int64_t)shape->items[0].number;
  int64_t cols = (int64_t)shape->items[1].number;
  double begin = offsets->items[0].number, end = offsets->items[1].number;
  if (rows <= 0 || cols <= 0 || begin < 0 || end > (double)data_size ||
      end - begin != (double)rows * (double)cols * bytes) {
    snprintf(what, sizeof what,
             "'%s' [%lld, %lld] does not fit its data_offsets within the "
             "file (truncated?)",
             name, (long long)rows, (long long)cols);
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile, what);
  }
  const tfm_lora_target *t = &desc->targets[target];
  int64_t r = is_a ? rows : cols;
  int64_t expected = is_a ? t->in_features : t->out_features;
  int64_t features = is_a ? cols : rows;
  if (features != expected) {
    char takes[64];
    snprintf(takes, sizeof takes, is_a ? "[r, %lld]" : "[%lld, r]",
             (long long)expected);
    snprintf(what, sizeof what,
             "'%s' is [%lld, %lld], where this model's '%s' takes %s: an "
             "adapter of another model",
             name, (long long)rows, (long long)cols, weight, takes);
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile, what);
  }
  if (r > desc->rank) {
    snprintf(what, sizeof what,
             "'%s' has rank %lld, above the %d this model's slots hold "
             "(tfmc --lora-rank)",
             name, (long long)r, desc->rank);
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile, what);
  }
  (is_a ? load->ranks_a : load->ranks_b)[target] = (int32_t)r;
  const uint8_t *data = data_start + (size_t)begin;
  int64_t rank = desc->rank;
  float *a = load->slot + tfm_lora_target_offset(load->bank, target);
  if (is_a) {
    for (int64_t i = 0; i < rows * cols; ++i)
      a[i] = value_at(data, bytes, bf16, i); /* rows r of [rank, in] */
    return TFM_OK;
  }
  double factor = load->scale * alpha_of(&load->config, module) /
                  (load->config.rslora ? sqrt((double)r) : (double)r);
  float *b = a + rank * t->in_features;
  for (int64_t o = 0; o < rows; ++o)
    for (int64_t c = 0; c < cols; ++c)
      b[o * rank + c] =
          (float)(factor * value_at(data, bytes, bf16, o * cols + c));
  return TFM_OK;
}

static tfm_status_code read_weights(lora_load *load) {
  static const char kFile[] = "adapter_model.safetensors";
  char path[4096], error[256];
  snprintf(path, sizeof path, "%s/%s", load->directory, kFile);
  load->file = tfm_read_file(path, &load->file_size);
  if (!load->file)
    return fail(load, TFM_ERROR_IO, kFile, strerror(errno));
  uint64_t header_size = 0;
  if (load->file_size >= 8)
    for (int i = 7; i >= 0; --i)
      header_size = header_size << 8 | load->file[i];
  if (load->file_size < 8 || header_size > load->file_size - 8)
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile,
                "not a safetensors file (its header runs past the end)");
  char *text = malloc(header_size + 1);
  if (!text)
    return fail(load, TFM_ERROR_OUT_OF_MEMORY, kFile, "out of memory");
  memcpy(text, load->file + 8, header_size);
  text[header_size] = '\0';
  load->header = tfm_json_parse(text, error, sizeof error);
  free(text);
  if (!load->header || load->header->kind != TFM_JSON_OBJECT)
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile,
                load->header ? "its header is not a JSON object" : error);
  const uint8_t *data = load->file + 8 + header_size;
  size_t data_size = load->file_size - 8 - header_size;
  for (size_t i = 0; i < load->header->count; ++i) {
    if (!strcmp(load->header->keys[i], "__metadata__"))
      continue;
    tfm_status_code code = place_tensor(
        load, load->header->keys[i], &load->header->items[i], data, data_size);
    if (code != TFM_OK)
      return code;
  }
  const tfm_lora_desc *desc = tfm_lora_bank_desc(load->bank);
  int pairs = 0;
  for (int32_t t = 0; t < desc->num_targets; ++t) {
    int32_t a = load->ranks_a[t], b = load->ranks_b[t];
    if (a == b) {
      pairs += a > 0;
      continue;
    }
    char what[1024];
    if (!a || !b)
      snprintf(what, sizeof what, "'%s' has lora_%s but no lora_%s",
               desc->targets[t].weight, a ? "A" : "B", a ? "B" : "A");
    else
      snprintf(what, sizeof what,
               "'%s' has lora_A of rank %d and lora_B of rank %d",
               desc->targets[t].weight, a, b);
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile, what);
  }
  if (!pairs)
    return fail(load, TFM_ERROR_INVALID_ARGUMENT, kFile,
                "the adapter has no LoRA matrices");
  return TFM_OK;
}

tfm_status_code tfm_lora_load(tfm_model *model, const char *directory,
                              float scale, int32_t *adapter,
                              tfm_status *status) {
  if (!model || !directory || !adapter)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_lora_load: NULL %s",
                    !model       ? "model"
                    : !directory ? "directory"
                                 : "adapter");
  if (!isfinite(scale))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_lora_load: %s: the scale must be finite", directory);
  tfm_lora_bank *bank = tfm_model_lora_bank(model);
  if (!bank)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_lora_load: model '%s' has no adapter slots (compile "
                    "it with tfmc --lora-slots)",
                    tfm_model_get_desc(model)->name);
  const tfm_lora_desc *desc = tfm_lora_bank_desc(bank);
  lora_load load = {
      .directory = directory, .bank = bank, .scale = scale, .status = status};
  load.slot = calloc((size_t)tfm_lora_slot_floats(bank), sizeof(float));
  load.ranks_a = calloc((size_t)desc->num_targets, sizeof(int32_t));
  load.ranks_b = calloc((size_t)desc->num_targets, sizeof(int32_t));
  tfm_status_code code =
      !load.slot || !load.ranks_a || !load.ranks_b
          ? tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory")
          : read_config(&load);
  if (code == TFM_OK)
    code = read_weights(&load);
  if (code == TFM_OK) {
    code = tfm_lora_bank_install(bank, load.slot, directory, adapter, status);
    load.slot = NULL; /* the bank's now, or freed by it */
  }
  free(load.slot);
  free(load.ranks_a);
  free(load.ranks_b);
  free(load.file);
  tfm_json_free(load.header);
  tfm_json_free(load.config_json);
  return code;
}
