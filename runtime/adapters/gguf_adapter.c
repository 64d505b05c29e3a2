/*===- gguf_adapter.c - llama.cpp's GGUF LoRA files ----------------------===*
 *
 * What llama.cpp's convert_lora_to_gguf.py writes and its --lora reads:
 * general.type "adapter", adapter.type "lora", adapter.lora.alpha, and for
 * each adapted weight W (the model's GGUF name, blk.N.attn_q.weight)
 * W.lora_a ([r, in] as rows of in) and W.lora_b ([out, r]), the B rows of
 * Q and K permuted as the model's are. Each B is scaled as llama.cpp
 * scales it: scale · alpha / r, or the scale alone where alpha is 0. The
 * file is read whole (adapters are small) and every read is bounds-checked.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/adapters/lora_layout.h"
#include "runtime/support/read_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  kGgufMagic = 0x46554747, /* "GGUF" */
  kTypeString = 8,
  kTypeArray = 9,
  kGgmlF32 = 0,
  kGgmlF16 = 1,
  kGgmlBF16 = 30
};

/* A cursor over the file; `bad` once a read would pass its end. */
typedef struct {
  const uint8_t *at, *end;
  int bad;
} cursor;

static const uint8_t *take(cursor *c, uint64_t n) {
  if (c->bad || n > (uint64_t)(c->end - c->at)) {
    c->bad = 1;
    return NULL;
  }
  const uint8_t *p = c->at;
  c->at += n;
  return p;
}

static uint64_t read_u(cursor *c, int bytes) {
  const uint8_t *p = take(c, (uint64_t)bytes);
  uint64_t v = 0;
  for (int i = bytes - 1; p && i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

/* A string: its bytes (not NUL-terminated) and length. */
static const char *read_string(cursor *c, uint64_t *length) {
  *length = read_u(c, 8);
  return (const char *)take(c, *length);
}

static int string_is(const char *s, uint64_t length, const char *want) {
  return s && length == strlen(want) && !memcmp(s, want, length);
}

/* Bytes of a scalar of GGUF value type `type`; 0 for strings and arrays,
 * -1 for an unknown type. */
static int scalar_bytes(uint32_t type) {
  static const int bytes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  return type < sizeof bytes / sizeof *bytes ? bytes[type] : -1;
}

static void skip_value(cursor *c, uint32_t type) {
  uint64_t length;
  if (type == kTypeString) {
    read_string(c, &length);
  } else if (type == kTypeArray) {
    uint32_t element = (uint32_t)read_u(c, 4);
    uint64_t count = read_u(c, 8);
    if (element == kTypeString) {
      for (uint64_t i = 0; i < count && !c->bad; ++i)
        read_string(c, &length);
    } else if (scalar_bytes(element) > 0 &&
               count <= UINT64_MAX / (uint64_t)scalar_bytes(element)) {
      take(c, count * (uint64_t)scalar_bytes(element));
    } else {
      c->bad = 1; /* nested arrays: not in adapter files */
    }
  } else if (scalar_bytes(type) > 0) {
    take(c, (uint64_t)scalar_bytes(type));
  } else {
    c->bad = 1;
  }
}

/* The metadata an adapter is checked and scaled by. */
typedef struct {
  int adapter, lora; /* general.type "adapter", adapter.type "lora" */
  float alpha;
  uint64_t alignment;
} gguf_metadata;

static void read_metadata(cursor *c, uint64_t count, gguf_metadata *m) {
  m->alignment = 32;
  for (uint64_t i = 0; i < count && !c->bad; ++i) {
    uint64_t key_length, value_length;
    const char *key = read_string(c, &key_length);
    uint32_t type = (uint32_t)read_u(c, 4);
    if (type == kTypeString && (string_is(key, key_length, "general.type") ||
                                string_is(key, key_length, "adapter.type"))) {
      const char *value = read_string(c, &value_length);
      if (string_is(key, key_length, "general.type"))
        m->adapter = string_is(value, value_length, "adapter");
      else
        m->lora = string_is(value, value_length, "lora");
    } else if (type == 6 && string_is(key, key_length, "adapter.lora.alpha")) {
      uint32_t bits = (uint32_t)read_u(c, 4);
      memcpy(&m->alpha, &bits, 4);
    } else if (type == 4 && string_is(key, key_length, "general.alignment")) {
      m->alignment = read_u(c, 4);
    } else {
      skip_value(c, type);
    }
  }
}

/* One tensor's description. */
typedef struct {
  char name[512];
  uint64_t dims[2];
  uint32_t n_dims, type;
  uint64_t offset;
} tensor_info;

static tfm_status_code place(lora_layout *layout, const tensor_info *t,
                             const gguf_metadata *m, const uint8_t *data,
                             uint64_t data_size) {
  char what[1024], weight[512];
  size_t length = strlen(t->name);
  int is_a = length > 7 && !strcmp(t->name + length - 7, ".lora_a");
  int is_b = length > 7 && !strcmp(t->name + length - 7, ".lora_b");
  if (!is_a && !is_b) {
    snprintf(what, sizeof what,
             "tensor '%s' is not a LoRA A or B matrix "
             "(NAME.lora_a, NAME.lora_b)",
             t->name);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, NULL, what);
  }
  snprintf(weight, sizeof weight, "%.*s", (int)(length - 7), t->name);
  lora_matrix matrix = {0};
  matrix.bytes = t->type == kGgmlF32                           ? 4
                 : t->type == kGgmlF16 || t->type == kGgmlBF16 ? 2
                                                               : 0;
  matrix.bf16 = t->type == kGgmlBF16;
  if (!matrix.bytes || t->n_dims != 2) {
    snprintf(what, sizeof what,
             "tensor '%s' is of GGML type %u with %u dimensions: 2-D F32, "
             "F16 and BF16 are read (convert_lora_to_gguf.py --outtype f32)",
             t->name, t->type, t->n_dims);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, NULL, what);
  }
  /* GGUF lists dimensions innermost first. */
  matrix.cols = (int64_t)t->dims[0];
  matrix.rows = (int64_t)t->dims[1];
  /* Dimensions of 2^24 at most keep the product's bytes below 2^50. */
  if (t->dims[0] == 0 || t->dims[1] == 0 || t->dims[0] > (1ull << 24) ||
      t->dims[1] > (1ull << 24) || t->offset > data_size ||
      t->dims[0] * t->dims[1] * (uint64_t)matrix.bytes >
          data_size - t->offset) {
    snprintf(what, sizeof what,
             "tensor '%s' [%llu, %llu] does not fit within the file "
             "(truncated?)",
             t->name, (unsigned long long)t->dims[1],
             (unsigned long long)t->dims[0]);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, NULL, what);
  }
  matrix.data = data + t->offset;
  double r = (double)matrix.cols; /* B's: [out, r] */
  double factor = m->alpha != 0 ? layout->scale * m->alpha / r : layout->scale;
  return tfm_lora_place(layout, NULL, t->name, weight, is_a, &matrix, factor);
}

static tfm_status_code read_file_tensors(lora_layout *layout,
                                         const uint8_t *bytes, size_t size) {
  cursor c = {bytes, bytes + size, 0};
  uint32_t magic = (uint32_t)read_u(&c, 4);
  uint32_t version = (uint32_t)read_u(&c, 4);
  if (c.bad || magic != kGgufMagic)
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, NULL,
                         "not a GGUF file, nor a PEFT adapter folder");
  if (version < 2 || version > 3)
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, NULL,
                         "GGUF version other than 2 or 3");
  uint64_t tensors = read_u(&c, 8), keys = read_u(&c, 8);
  gguf_metadata metadata = {0};
  read_metadata(&c, keys, &metadata);
  if (!c.bad && (!metadata.adapter || !metadata.lora))
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, NULL,
                         "not a LoRA adapter (general.type 'adapter', "
                         "adapter.type 'lora'): a model's GGUF file?");
  if (!c.bad && (metadata.alignment == 0 || metadata.alignment > 4096))
    c.bad = 1;
  tensor_info *infos = NULL;
  if (!c.bad && tensors <= size / 24) /* each info takes 24 bytes at least */
    infos = calloc(tensors ? tensors : 1, sizeof *infos);
  for (uint64_t i = 0; infos && i < tensors && !c.bad; ++i) {
    uint64_t length;
    const char *name = read_string(&c, &length);
    tensor_info *t = &infos[i];
    if (name)
      snprintf(t->name, sizeof t->name, "%.*s",
               (int)(length < sizeof t->name ? length : sizeof t->name - 1),
               name);
    t->n_dims = (uint32_t)read_u(&c, 4);
    for (uint32_t d = 0; d < t->n_dims && d < 4 && !c.bad; ++d) {
      uint64_t dim = read_u(&c, 8);
      if (d < 2)
        t->dims[d] = dim;
    }
    if (t->n_dims > 4)
      c.bad = 1;
    t->type = (uint32_t)read_u(&c, 4);
    t->offset = read_u(&c, 8);
  }
  tfm_status_code code = TFM_OK;
  if (c.bad || (!infos && tensors))
    code = tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, NULL,
                         "its header runs past the end of the file "
                         "(truncated or malformed)");
  uint64_t header = (uint64_t)(c.at - bytes);
  uint64_t start = (header + metadata.alignment - 1) / metadata.alignment *
                   metadata.alignment;
  if (code == TFM_OK && start > size)
    code = tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, NULL,
                         "its data starts past the end of the file");
  for (uint64_t i = 0; code == TFM_OK && i < tensors; ++i)
    code = place(layout, &infos[i], &metadata, bytes + start, size - start);
  free(infos);
  return code == TFM_OK ? tfm_lora_check_pairs(layout, NULL) : code;
}

tfm_status_code tfm_lora_read_gguf(lora_layout *layout) {
  size_t size;
  uint8_t *bytes = tfm_read_file(layout->path, &size);
  if (!bytes)
    return tfm_lora_fail(layout, TFM_ERROR_IO, NULL, strerror(errno));
  tfm_status_code code = read_file_tensors(layout, bytes, size);
  free(bytes);
  return code;
}
